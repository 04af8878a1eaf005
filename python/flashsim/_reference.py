"""flashsim.attention and flashsim.attention_backward: the exact reference on the caller's arrays."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _native
from ._arrays import framework, from_native, to_native


def _window(window: Optional[Sequence[int]]) -> tuple[int, int]:
    if window is None:
        return -1, -1
    try:
        left, right = (int(w) for w in window)
    except (TypeError, ValueError):
        raise ValueError(f"window: expected (left, right) with -1 for unbounded, got {window!r}") from None
    return left, right


def _common(q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k, causal, window, softcap, scale,
            precision, algorithm, block_q, block_k, threads, max_memory_bytes) -> tuple[list, dict]:
    left, right = _window(window)
    arrays = [to_native(q, "q"), to_native(k, "k"), to_native(v, "v")]
    kw = dict(bias=to_native(bias, "bias"), mask=to_native(mask, "mask"),
              alibi_slopes=to_native(alibi_slopes, "alibi_slopes"), cu_seqlens_q=to_native(cu_seqlens_q, "cu_seqlens_q"),
              cu_seqlens_k=to_native(cu_seqlens_k, "cu_seqlens_k"), causal=bool(causal), window_left=left,
              window_right=right, softcap=float(softcap), scale=None if scale is None else float(scale),
              precision=precision, algorithm=algorithm, block_q=block_q, block_k=block_k, threads=int(threads),
              max_memory_bytes=int(max_memory_bytes))
    return arrays, kw


def attention(q: Any, k: Any, v: Any, *, causal: bool = False, window: Optional[Sequence[int]] = None,
              softcap: float = 0.0, bias: Any = None, mask: Any = None, alibi_slopes: Any = None,
              cu_seqlens_q: Any = None, cu_seqlens_k: Any = None, scale: Optional[float] = None,
              precision: str = "exact", algorithm: str = "fa2", block_q: Optional[int] = None,
              block_k: Optional[int] = None, threads: int = 0, max_memory_bytes: int = 0) -> tuple[Any, Any]:
    """Attention forward, computed exactly on the CPU. Returns (o, lse).

    Layout BSHD: q [batch, seqlen_q, heads_q, head_dim], k [batch, seqlen_k, heads_kv, head_dim],
    v [batch, seqlen_k, heads_kv, head_dim_v]; with cu_seqlens_q / cu_seqlens_k (int32 or int64, batch + 1
    offsets) the rows are packed: q [total_q, heads_q, head_dim] and so on. heads_q a multiple of heads_kv (GQA).
    o is [batch, seqlen_q, heads_q, head_dim_v]; lse [batch, heads_q, seqlen_q] ([heads_q, total_q] packed),
    natural log, -inf for a row that sees no key.

    causal: bottom-right aligned (query i sees key j <= i + seqlen_k - seqlen_q). window: (left, right), -1
    unbounded, as flash-attention's window_size. softcap: c > 0 gives s = c tanh(s / c). bias: additive,
    [batch|1, heads_q|1, seqlen_q, seqlen_k] in the inputs' dtype. mask: bool of the same shapes, False hides a
    score. alibi_slopes: [heads_q] float32. scale: default 1 / sqrt(head_dim).

    Inputs: NumPy (bfloat16 via ml_dtypes), torch CPU tensors, JAX arrays; float64/32/16 and bfloat16; q, k, v of
    one dtype. precision: 'exact' (fp64; float64 results), 'fp32' (float32 results), 'emulated' (a GPU kernel's
    pipeline in the inputs' dtype; o in it, lse float32). Results are NumPy arrays, or torch tensors when q is
    one. algorithm: naive, three-pass, two-pass, fa1, fa2 (same function, other loops). threads: 0 for all
    cores. Bad input raises ValueError naming the field; an operation over max_memory_bytes (0: 80% of the
    available memory) raises MemoryError before allocating.
    """
    arrays, kw = _common(q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k, causal, window, softcap,
                         scale, precision, algorithm, block_q, block_k, threads, max_memory_bytes)
    o, lse = _native.attention(*arrays, **kw)
    like = framework(q)
    return from_native(o, like), from_native(lse, like)


def attention_backward(q: Any, k: Any, v: Any, o: Any, do: Any, lse: Any, *, causal: bool = False,
                       window: Optional[Sequence[int]] = None, softcap: float = 0.0, bias: Any = None,
                       mask: Any = None, alibi_slopes: Any = None, cu_seqlens_q: Any = None,
                       cu_seqlens_k: Any = None, scale: Optional[float] = None, precision: str = "exact",
                       algorithm: str = "fa2", block_q: Optional[int] = None, block_k: Optional[int] = None,
                       threads: int = 0, max_memory_bytes: int = 0) -> tuple[Any, Any, Any, Any]:
    """Attention backward. Returns (dq, dk, dv, dbias); dbias is None without a bias, else the bias's shape
    (summed over its broadcast dims).

    o and lse are the forward's (flashsim.attention's, or a kernel's), do the upstream gradient (o's shape);
    everything else as flashsim.attention. algorithm: fa2 (tiled, P recomputed from lse) or naive. The block
    tile of the backward is flashsim's default (Br 64, Bc 128): block_q / block_k set the forward's only.
    """
    arrays, kw = _common(q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k, causal, window, softcap,
                         scale, precision, algorithm, block_q, block_k, threads, max_memory_bytes)
    grads = _native.attention_backward(*arrays, to_native(o, "o"), to_native(do, "do"), to_native(lse, "lse"),
                                       **kw)
    like = framework(q)
    return tuple(from_native(g, like) for g in grads)  # type: ignore[return-value]
