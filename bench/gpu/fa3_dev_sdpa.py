"""SDPA's cuDNN and flash backends on fa3_dev.cu's timing grid (bf16, BSHD inputs as the goldens), same run."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa


def time_ms(fn, reps=5, inner=10):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(inner):
            fn()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / inner)
    return sorted(times)[len(times) // 2]


def main():
    grid = [(2 * 16384 // n, 16, n, d, c) for d in (64, 128, 256) for n in (1024, 4096, 16384) for c in (False, True)]
    grid += [(2, 16, 4096, 128, False), (2, 16, 4096, 128, True)]
    for b, h, n, d, causal in grid:
        q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
        flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
        row = f"sdpa b{b} h{h} n{n} d{d} {'causal' if causal else 'full'}:"
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    t = time_ms(lambda: sdpa(q, k, v, is_causal=causal))
                row += f" {name} {t:.3f} ms {flops / t / 1e9:.1f} TFLOP/s;"
            except RuntimeError as e:
                row += f" {name} n/a ({str(e).splitlines()[0][:60]});"
        print(row)
    # Backward (dO given; the forward outside the timed region), FLOPs 2.5x the forward's.
    bwd_grid = [(2 * 16384 // n, 16, n, d, c) for d in (64, 128) for n in (1024, 4096, 16384) for c in (False, True)]
    bwd_grid += [(2, 16, 4096, 128, False), (2, 16, 4096, 128, True)]
    for b, h, n, d, causal in bwd_grid:
        q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                   for _ in range(3))
        flops = 2.5 * 4.0 * b * h * n * n * d / (2 if causal else 1)
        row = f"sdpa bwd b{b} h{h} n{n} d{d} {'causal' if causal else 'full'}:"
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    out = sdpa(q, k, v, is_causal=causal)
                    grad = torch.randn_like(out)
                    t = time_ms(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True), inner=5)
                row += f" {name} {t:.3f} ms {flops / t / 1e9:.1f} TFLOP/s;"
            except RuntimeError as e:
                row += f" {name} n/a ({str(e).splitlines()[0][:60]});"
        print(row)


if __name__ == "__main__":
    main()
