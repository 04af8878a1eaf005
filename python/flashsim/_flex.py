"""FlexAttention's arguments for a golden case (Case.kwargs("flex")): the score pipeline (softcap, bias, ALiBi)
as a score_mod and the visible keys (window and causal aligned bottom-right, the boolean mask, the block mask's
tiles, variable lengths as documents of one packed sequence) as a mask_mod made into a BlockMask."""
from __future__ import annotations

from typing import Any


def _positions(cu: Any, total: int) -> tuple[Any, Any, Any]:
    """(sequence, position in it, length of its sequence) of each row of a packed tensor."""
    import torch

    rows = torch.arange(total, device=cu.device, dtype=cu.dtype)
    seq = torch.searchsorted(cu[1:], rows, right=True)
    return seq, rows - cu[seq], (cu[1:] - cu[:-1])[seq]


def _broadcast(t: Any, b: Any, h: Any, i: Any, j: Any) -> Any:
    """t[b, h, i, j] for a [batch|1, heads|1, ., .] tensor (its dims of size 1 broadcast)."""
    return t[b if t.shape[0] > 1 else 0, h if t.shape[1] > 1 else 0, i, j]


def flex_kwargs(case: Any, like: Any, takes: set[str], sinks: Any) -> dict[str, Any]:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask

    c, names = case.case_json, case.input_names
    if "k_cache" in names:
        raise ValueError(f"{case.name}: a KV-cache case has no flex_attention call (the cache is paged)")
    if "sinks" in names and sinks is None:  # the sink is one more key (below): the caller appends it
        raise ValueError(f"{case.name}: a sinks case needs the sinks tensor (kwargs('flex', like, sinks=...))")
    if "sinks" not in names and sinks is not None:
        raise ValueError(f"{case.name}: sinks given to a case without attention sinks")
    if "dropout_keep" in names and "dropout" not in takes:  # dropout follows the softmax: no score_mod does it
        raise ValueError(f"{case.name}: flex_attention takes no dropout keep mask")
    if c["dtype"] in ("e4m3", "e5m2"):
        raise ValueError(f"{case.name}: flex_attention takes no FP8 inputs with descale factors")
    if c.get("mla") and "mla" not in takes:  # flex_attention's value tensor is its own input, not a view of k
        raise ValueError(f"{case.name}: an MLA case has no v input (V is k's first head_dim_v columns)")
    dev = like.device
    varlen = "cu_seqlens_q" in names
    if varlen:  # one packed sequence of batch 1; `seq` picks a sequence's mask, bias and block-mask slice
        cu_q, cu_k = (x.to(dev, torch.int64) for x in case.inputs("cu_seqlens_q", "cu_seqlens_k", like=like))
        seq_q, pos_q, len_q = _positions(cu_q, int(cu_q[-1]))
        seq_k, pos_k, len_k = _positions(cu_k, int(cu_k[-1]))
        batch, n_q, n_k = 1, int(cu_q[-1]), int(cu_k[-1])
    else:
        batch, n_q, n_k = c["batch"], c["seqlen_q"], c["seqlen_k"]
    extra = {n: case.inputs(n, like=like) for n in ("bias", "mask", "alibi_slopes", "block_mask") if n in names}
    left, right = c.get("window_left", -1), c.get("window_right", -1)
    softcap = c.get("softcap", 0.0)

    def where(b: Any, i: Any, j: Any) -> tuple[Any, Any, Any, Any]:
        """(sequence, query position, key position, Sk - Sq of the sequence) of a score."""
        if sinks is not None:  # the sink key (index n_k) read as the last key; score_mod and mask_mod replace it
            j = torch.clamp(j, max=n_k - 1)
        if varlen:
            return seq_q[i], pos_q[i], pos_k[j], len_k[j] - len_q[i]
        return b, i, j, n_k - n_q

    def score_mod(score: Any, b: Any, h: Any, i: Any, j: Any) -> Any:
        s, qi, kj, shift = where(b, i, j)
        if softcap > 0:
            score = softcap * torch.tanh(score / softcap)  # s = c tanh(s / c)
        if "bias" in extra:
            score = score + _broadcast(extra["bias"], s, h, qi, kj).float()
        if "alibi_slopes" in extra:
            score = score - extra["alibi_slopes"][h] * (qi + shift - kj).abs()  # -slope_h |i + Sk - Sq - j|
        if sinks is not None:  # key n_k is the sink: its logit, past the pipeline (softcap does not touch it)
            score = torch.where(j == n_k, sinks[h].to(score.dtype), score)
        return score

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        s, qi, kj, shift = where(b, i, j)
        keep = seq_q[i] == seq_k[torch.clamp(j, max=n_k - 1)] if varlen else qi >= 0
        if left >= 0:
            keep = keep & (kj >= qi + shift - left)
        if right >= 0:
            keep = keep & (kj <= qi + shift + right)
        if "mask" in extra:
            keep = keep & _broadcast(extra["mask"], s, h, qi, kj)
        if "block_mask" in extra:
            keep = keep & _broadcast(extra["block_mask"], s, h, qi // c["block_q"], kj // c["block_k"])
        if sinks is not None:  # every row sees the sink
            keep = keep | (j == n_k)
        return keep

    masked = varlen or left >= 0 or right >= 0 or bool({"mask", "block_mask"} & extra.keys())
    pipeline = softcap > 0 or sinks is not None or bool({"bias", "alibi_slopes"} & extra.keys())
    keys = n_k + (sinks is not None)
    return {"scale": c["scale"], "enable_gqa": c["heads_q"] != c.get("heads_kv", c["heads_q"]),
            "score_mod": score_mod if pipeline else None,
            "block_mask": create_block_mask(mask_mod, batch, c["heads_q"], n_q, keys, device=dev) if masked else None}
