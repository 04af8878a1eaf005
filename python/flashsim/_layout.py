"""An attention case's tensors in the layouts kernels take them, and back (Case.inputs / Case.verify's `layout`).

The case's own layout ("bshd"): q, k, v, do, o and their gradients [batch, seqlen, heads, d] (a variable-length
case's packed [total, heads, d]), lse [batch, heads, seqlen_q] ([heads, total]).
"bhsd" (SDPA, FlexAttention, JAX's cuDNN path): the sequence tensors [batch, heads, seqlen, d] (a variable-length
case's as one batch of its packed sequences, [1, heads, total, d]), lse [batch, heads, seqlen_q] ([1, heads, total]).
"tokens" (FlashInfer's ragged and paged calls, packed token-major): the sequence tensors [batch * seqlen, heads, d]
([total, heads, d]), lse [batch * seqlen_q, heads] ([total, heads]).
Any array type with swapaxes and reshape (NumPy, torch, JAX); no data is copied where a view does.
"""
from __future__ import annotations

from typing import Any

LAYOUTS = ("bshd", "bhsd", "tokens")
SEQUENCE_TENSORS = {"q", "k", "v", "do", "o", "dq", "dk", "dv"}  # [.., seqlen, heads, d] in the case's layout


def check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout: '{layout}': expected one of {', '.join(LAYOUTS)}")


def shape_in(shape: tuple, name: str, layout: str, varlen: bool) -> tuple:
    """The shape a case tensor of `shape` (the case's layout) has in `layout` (what from_case gives)."""
    shape = tuple(shape)
    if layout == "bshd" or (name not in SEQUENCE_TENSORS and name != "lse"):
        return shape
    if layout == "bhsd":
        if name == "lse":
            return (1, *shape) if varlen else shape
        return (1, shape[1], shape[0], *shape[2:]) if varlen else (shape[0], shape[2], shape[1], *shape[3:])
    if name == "lse":
        return (shape[1], shape[0]) if varlen else (shape[0] * shape[2], shape[1])
    return shape if varlen else (shape[0] * shape[1], *shape[2:])


def from_case(x: Any, name: str, layout: str, varlen: bool) -> Any:
    """A case tensor (the case's layout) in `layout`; tensors other than the sequence tensors and lse unchanged."""
    if layout == "bshd" or (name not in SEQUENCE_TENSORS and name != "lse"):
        return x
    if layout == "bhsd":
        if name == "lse":
            return x[None] if varlen else x
        return x.swapaxes(0, 1)[None] if varlen else x.swapaxes(1, 2)
    if name == "lse":  # [b, h, s] -> [b * s, h]; [h, total] -> [total, h]
        return x.swapaxes(0, 1) if varlen else x.swapaxes(1, 2).reshape(-1, x.shape[1])
    return x if varlen else x.reshape(-1, *x.shape[2:])


def to_case(x: Any, name: str, layout: str, varlen: bool, batch: int) -> Any:
    """A kernel's output in `layout` as the case holds it (from_case's inverse)."""
    if layout == "bshd" or (name not in SEQUENCE_TENSORS and name != "lse"):
        return x
    if layout == "bhsd":
        if name == "lse":
            return x[0] if varlen else x
        return x[0].swapaxes(0, 1) if varlen else x.swapaxes(1, 2)
    if name == "lse":  # [b * s, h] -> [b, h, s]; [total, h] -> [h, total]
        return x.swapaxes(0, 1) if varlen else x.reshape(batch, -1, x.shape[-1]).swapaxes(1, 2)
    return x if varlen else x.reshape(batch, -1, *x.shape[1:])
