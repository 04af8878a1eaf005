#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the GPU machine (needs torch with CUDA), for run.py and ncu:

  python3 bench/gpu/sdpa.py bench [--seqlens ...]    backends timed on flashsim-gpu bench's grid (CSV)
  python3 bench/gpu/sdpa.py once B H HKV N D CAUSAL  one flash forward + backward, for ncu to profile
  python3 bench/gpu/sdpa.py decode                   the flash backend on decode steps, each launched kernel timed
                                                     (calibration h100.sdpa_decode_splits)
  python3 bench/gpu/sdpa.py decode-once B N          one flash decode call, for ncu
  python3 bench/gpu/sdpa.py decode-grid [--batches ..] SDPA's backends on flashsim-gpu decode-bench's grid
                                                     (contiguous K/V; CSV), and FlashInfer's paged decode kernel
                                                     (--backends ...,flashinfer; FlashInfer on PYTHONPATH)
  python3 bench/gpu/sdpa.py golden OUT               SDPA as a candidate on the smoke suite and on gpu_golden/default
                                                     (run.py bundle --golden-subset), candidates as a tarball in OUT
"""
import argparse
import contextlib
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BACKENDS = {"sdpa-flash": SDPBackend.FLASH_ATTENTION, "sdpa-cudnn": SDPBackend.CUDNN_ATTENTION,
            "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION}


def median_ms(fn, count, warmup, repeats):
    """Median over `repeats` timed calls fn(i) (i cycling through the `count` input sets) after `warmup` calls."""
    for i in range(warmup):
        fn(i % count)
    times = []
    for i in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn((warmup + i) % count)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def bench(argv):
    """flash, cuDNN and efficient backends on flashsim-gpu bench's grid: bf16, batch = 16384 / seqlen and heads =
    2048 / head dim unless given, causal and not. CUDA events around each call, warm-up first, the median of
    --repeats timed calls, inputs rotated through more memory than L2 holds, laid out as flashsim's kernels take
    them (--layout bshd) unless --layout bhsd. FLOPs as flashsim-gpu counts them
    (4 B H S^2 d forward, halved when causal; backward 2.5x). CSV on stdout with `flashsim-gpu bench --csv`'s
    columns."""
    ap = argparse.ArgumentParser(prog="sdpa.py bench")
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--heads", type=int, default=0)
    ap.add_argument("--causal", default="both", choices=["no", "yes", "both"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rotate-mb", type=int, default=256)
    # flashsim's kernels and goldens take [batch, seqlen, heads, d] (BSHD); SDPA gets those tensors transposed, so
    # that both sides read the same memory layout. bhsd: contiguous [batch, heads, seqlen, d] instead.
    ap.add_argument("--layout", default="bshd", choices=["bshd", "bhsd"])
    args = ap.parse_args(argv)

    def tensor(b, h, n, d, grad):
        shape = (b, n, h, d) if args.layout == "bshd" else (b, h, n, d)
        t = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
        t = t.transpose(1, 2) if args.layout == "bshd" else t
        return t.requires_grad_() if grad else t

    print("kernel,problem,fwd_ms,fwd_tflops,bwd_ms,bwd_tflops,skipped")
    for d in map(int, args.head_dims.split(",")):
        for n in map(int, args.seqlens.split(",")):
            for causal in (False, True):
                if (causal and args.causal == "no") or (not causal and args.causal == "yes"):
                    continue
                b = args.batch or max(1, 16384 // n)
                h = args.heads or max(1, 2048 // d)
                # The problem as flashsim describes it (AttentionProblem::describe).
                problem = f"b{b} h{h} q{n} k{n} d{d}{' causal' if causal else ''} bf16"
                flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
                per_set = 5 * b * n * h * d * 2  # q k v o do, bf16
                sets = []
                for _ in range(max(1, min(16, args.rotate_mb * 2**20 // per_set + 1))):
                    q, k, v = (tensor(b, h, n, d, True) for _ in range(3))
                    sets.append((q, k, v, tensor(b, h, n, d, False)))
                for name, backend in BACKENDS.items():
                    try:
                        with sdpa_kernel(backend):
                            def forward(i):
                                q, k, v, _ = sets[i]
                                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            fwd = median_ms(forward, len(sets), 3, args.repeats)
                            outs = [forward(i) for i in range(len(sets))]
                            bwd = median_ms(lambda i: torch.autograd.grad(outs[i], sets[i][:3], sets[i][3], retain_graph=True),
                                            len(sets), 3, args.repeats)
                        print(f"{name},{problem},{fwd:.4f},{flops / fwd / 1e9:.1f},{bwd:.4f},{2.5 * flops / bwd / 1e9:.1f},\"\"",
                              flush=True)
                    except RuntimeError as e:
                        print(f"{name},{problem},0,0,0,0,\"{str(e).splitlines()[0][:80]}\"", flush=True)
                    torch.cuda.empty_cache()



def once(argv):
    """One forward and backward of the flash backend, for ncu: BATCH HEADS HEADS_KV SEQLEN HEAD_DIM CAUSAL(0|1); bf16
    inputs from torch.randn, [batch, heads, seqlen, dim] as SDPA takes them; GQA through enable_gqa=True. With
    FLASHSIM_SDPA_OFFSET_BYTES set (a multiple of 128), Q, K and V lie back to back in one allocation, that many
    bytes into it (each rounded up to 128 bytes): the same kernel on the same shape at other addresses."""
    b, h, hkv, n, d, causal = (int(x) for x in argv[:6])
    torch.manual_seed(0)
    dev = "cuda"
    shapes = ((b, h, n, d), (b, hkv, n, d), (b, hkv, n, d))
    offset = os.environ.get("FLASHSIM_SDPA_OFFSET_BYTES")
    if offset is None:
        q, k, v = (torch.randn(*s, device=dev, dtype=torch.bfloat16, requires_grad=True) for s in shapes)
    else:
        if not offset.isdigit() or int(offset) % 128:
            raise SystemExit(f"FLASHSIM_SDPA_OFFSET_BYTES={offset}: a multiple of 128 at least 0")
        sizes = [(math.prod(s) * 2 + 127) // 128 * 128 for s in shapes]  # bf16, each on a 128-byte line
        buf = torch.empty(int(offset) + sum(sizes), device=dev, dtype=torch.uint8)
        starts = [int(offset) + sum(sizes[:i]) for i in range(3)]
        q, k, v = (buf[a:a + z].view(torch.bfloat16)[:math.prod(s)].view(s) for a, z, s in zip(starts, sizes, shapes))
        for t in (q, k, v):
            t.copy_(torch.randn(t.shape, device=dev, dtype=torch.bfloat16))
            t.requires_grad_()
    kwargs = {"is_causal": bool(causal)}
    if hkv != h:
        kwargs["enable_gqa"] = True
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    print(f"ok b{b} h{h}/{hkv} n{n} d{d} causal{causal}", flush=True)


def decode(argv):
    """The flash backend (FlashAttention-2's mha_fwd, vendored in PyTorch) on a decode step: one query row per
    sequence, 32 query heads over 8 kv heads (enable_gqa), contiguous K/V, head dim 128, bf16. Prints each launched
    kernel (name, grid, time from the profiler) with L2 flushed before the call, median of 7 calls."""
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


def decode_once(argv):
    """One flash decode call (for ncu): BATCH SEQLEN_K, 32 query heads over 8 kv heads, d128, bf16."""
    batch, seqlen = int(argv[0]), int(argv[1])
    q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, 8, seqlen, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()


def golden(argv):
    """SDPA (CUDA) as a candidate on the committed smoke suite and on gpu_golden/default (the default suite's cases
    under 500 KB), through golden/examples/run_candidate.py; the candidate folders as a tarball in OUT, verified
    afterwards here with `flashsim golden verify`."""
    out = argv[0]
    print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
    try:
        import safetensors  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links",
                        "gpu_golden/wheels", "safetensors"], check=True)
    with tempfile.TemporaryDirectory() as work:
        for suite, path in (("smoke", "golden/data/smoke"), ("default", "gpu_golden/default")):
            subprocess.run([sys.executable, os.path.join(ROOT, "golden/examples/run_candidate.py"), "--golden", path,
                            "--out", os.path.join(work, "sdpa-" + suite), "--kernel", "sdpa", "--no-verify"],
                           check=True)
        with tarfile.open(os.path.join(out, "sdpa_candidates.tar.gz"), "w:gz") as t:
            for suite in ("smoke", "default"):
                t.add(os.path.join(work, "sdpa-" + suite), "sdpa-" + suite)


def flashinfer_decode(qs, ks, vs, page):
    """FlashInfer's decode kernel on the same keys in a paged cache ("NHD" [pages, page, hk, d], each sequence's pages
    shuffled over the cache): a call fn(i) on input set i, planned once (every set has the same shape)."""
    import flashinfer

    b, hk, n, d = ks[0].shape
    per = -(-n // page)  # pages a sequence uses, the last partly filled where page does not divide n
    perm = torch.randperm(b * per, device="cuda")  # physical page of (sequence, logical page)

    def paged(x):  # [b, hk, n, d] -> [b * per, page, hk, d], logical page j of sequence s at perm[s * per + j]
        x = F.pad(x, (0, 0, 0, per * page - n)).transpose(1, 2).reshape(b * per, page, hk, d)
        out = torch.empty_like(x)
        out[perm] = x
        return out

    caches = [(paged(k), paged(v)) for k, v in zip(ks, vs)]
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.empty(128 << 20, dtype=torch.uint8, device="cuda"), "NHD")
    w.plan(torch.arange(b + 1, device="cuda", dtype=torch.int32) * per, perm.to(torch.int32),
           torch.full((b,), n - (per - 1) * page, device="cuda", dtype=torch.int32), qs[0].shape[1], hk, d, page,
           q_data_type=qs[0].dtype, kv_data_type=ks[0].dtype)
    return lambda i: w.run(qs[i][:, :, 0], caches[i])


def decode_grid(argv):
    """SDPA's backends on a decode step over flashsim-gpu decode-bench's grid (contiguous K/V [b, 8, n, 128] bf16:
    SDPA has no paged cache), one query row a sequence, 32 query heads (enable_gqa), inputs rotated through more
    memory than L2 holds; backend flashinfer: FlashInfer's paged decode kernel on the same keys at each of
    --page-sizes (rows flashinfer-p16, ...). CSV: backend, batch, cache_len, ms, kv_GBps (K and V bytes / time)."""
    ap = argparse.ArgumentParser(prog="sdpa.py decode-grid")
    ap.add_argument("--batches", default="1,8,32,64,128")
    ap.add_argument("--cache-lens", default="1024,4096,8192,32768")
    ap.add_argument("--backends", default="sdpa-flash,sdpa-cudnn,sdpa-efficient")
    ap.add_argument("--page-sizes", default="16,256", help="FlashInfer's cache pages (backend flashinfer)")
    ap.add_argument("--max-cache-gib", type=float, default=24)
    a = ap.parse_args(argv)
    hq, hk, d = 32, 8, 128
    print("backend,batch,cache_len,ms,kv_GBps", flush=True)
    for batch in map(int, a.batches.split(",")):
        for n in map(int, a.cache_lens.split(",")):
            kv = 2 * batch * hk * n * d * 2
            if kv > a.max_cache_gib * (1 << 30):
                continue
            sets = max(1, min(16, (256 << 20) // kv + 1))  # 256 MiB of copies: 5x an H100's L2
            qs = [torch.randn(batch, hq, 1, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            ks = [torch.randn(batch, hk, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            vs = [torch.randn(batch, hk, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            calls = []
            for name in a.backends.split(","):
                if name == "flashinfer":
                    calls += [(f"flashinfer-p{p}", None, lambda p=int(p): flashinfer_decode(qs, ks, vs, p))
                              for p in a.page_sizes.split(",")]
                else:
                    calls.append((name, BACKENDS[name], lambda: lambda i: F.scaled_dot_product_attention(
                        qs[i], ks[i], vs[i], enable_gqa=True)))
            for name, backend, make in calls:
                try:
                    with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                        ms = median_ms(make(), sets, 3, 20)
                    print(f"{name},{batch},{n},{ms:.4f},{kv / (ms * 1e-3) / 1e9:.1f}", flush=True)
                except RuntimeError as e:  # a backend that refuses the shape
                    print(f"{name},{batch},{n},,,\"{str(e).splitlines()[0][:120]}\"", flush=True)
                torch.cuda.empty_cache()
            del qs, ks, vs
            torch.cuda.empty_cache()


VERBS = {"bench": bench, "once": once, "decode": decode, "decode-once": decode_once, "decode-grid": decode_grid, "golden": golden}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in VERBS:
        sys.exit(__doc__)
    VERBS[sys.argv[1]](sys.argv[2:])
