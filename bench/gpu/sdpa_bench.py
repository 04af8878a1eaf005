#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention backends (flash, cuDNN, efficient) on flashsim-gpu bench's grid: bf16,
batch = 16384 / seqlen and heads = 2048 / head dim unless given, causal and not. CUDA events around each call,
warm-up first, the median of --repeats timed calls, inputs rotated through more memory than L2 holds. FLOPs as
flashsim-gpu counts them (4 B H S^2 d forward, halved when causal; backward 2.5x). CSV on stdout with the
columns of `flashsim-gpu bench --csv`."""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

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


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--heads", type=int, default=0)
    ap.add_argument("--causal", default="both", choices=["no", "yes", "both"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rotate-mb", type=int, default=256)
    args = ap.parse_args()
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
                    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    sets.append((q, k, v, torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16)))
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


if __name__ == "__main__":
    main()
