"""FlexAttention's arguments for a golden case (Case.kwargs("flex")): the score pipeline (softcap, bias, ALiBi)
as a score_mod and the visible keys (window and causal aligned bottom-right, the boolean mask, the block mask's
tiles, variable lengths as documents of one packed sequence) as a mask_mod made into a BlockMask; a KV-cache case
through torch's PagedAttention (flex_paged: Case.flex_paged)."""
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


def _window(keep: Any, qi: Any, kj: Any, shift: Any, left: int, right: int) -> Any:
    """keep and the window around the diagonal kj = qi + shift (bottom-right aligned): left keys back, right ahead
    (-1: unbounded); causal is right = 0."""
    if left >= 0:
        keep = keep & (kj >= qi + shift - left)
    if right >= 0:
        keep = keep & (kj <= qi + shift + right)
    return keep


def _alibi(slope: Any, qi: Any, kj: Any, shift: Any) -> Any:
    """ALiBi's term of a score: -slope_h |i + Sk - Sq - j|."""
    return -slope * abs(qi + shift - kj)


def flex_kwargs(case: Any, like: Any, takes: set[str], sinks: Any) -> dict[str, Any]:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask

    c, names = case.case_json, case.input_names
    if "k_cache" in names:
        raise ValueError(f"{case.name}: a KV-cache case is paged: Case.flex_paged gives its flex_attention call")
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
            score = score + _alibi(extra["alibi_slopes"][h], qi, kj, shift)
        if sinks is not None:  # key n_k is the sink: its logit, past the pipeline (softcap does not touch it)
            score = torch.where(j == n_k, sinks[h].to(score.dtype), score)
        return score

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:
        s, qi, kj, shift = where(b, i, j)
        keep = _window(seq_q[i] == seq_k[torch.clamp(j, max=n_k - 1)] if varlen else qi >= 0, qi, kj, shift, left,
                       right)
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


def flex_paged(case: Any, like: Any) -> tuple[Any, Any, dict[str, Any]]:
    """A KV-cache case as FlexAttention's paged attention takes it (torch.nn.attention.experimental's
    PagedAttention): (k, v, kwargs). k and v are the cache in its layout [1, heads_kv, num_blocks * page_size, d],
    k_new / v_new written at cache_seqlens (PagedAttention.assign: what flash_attn_with_kvcache does before
    attending); kwargs' mask_mod and score_mod see a key's logical position through PagedAttention's page maps
    (window and causal bottom-right per sequence, softcap, ALiBi), and the block mask covers the physical cache
    at FlexAttention's own block size, so any page size runs. Call flex_attention(q [b, h, s, d], k, v, **kwargs)."""
    import torch
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask

    c, names = case.case_json, case.input_names
    if "k_cache" not in names:
        raise ValueError(f"{case.name}: not a KV-cache case (Case.kwargs('flex') runs it)")
    for feature, why in (("sinks", "a sink key"), ("mla", "MLA's one latent cache"), ("fp8", "FP8 inputs")):
        if case.has_feature(feature):
            raise ValueError(f"{case.name}: the paged FlexAttention call takes no {why}")
    dev = like.device
    kc, vc = case.inputs("k_cache", "v_cache", like=like)  # [pages, page_size, heads_kv, d]
    table = case.inputs("block_table", like=like).to(dev, torch.int64)
    cached = case.inputs("cache_seqlens", like=like).to(dev, torch.int64)
    pages, page, heads_kv = kc.shape[:3]
    batch = table.shape[0]
    k, v = (x.permute(2, 0, 1, 3).reshape(1, heads_kv, pages * page, x.shape[3]).clone() for x in (kc, vc))
    new = case.inputs("k_new", "v_new", like=like) if "k_new" in names else None
    keys = cached + (new[0].shape[1] if new is not None else 0)  # each sequence's keys after the append
    paged = PagedAttention(pages, page, batch, device=dev)
    for b in range(batch):  # a sequence's pages alone: entries past them are 0 (golden/README.md)
        used = int((keys[b] + page - 1) // page)
        paged.page_table[b, :used] = table[b, :used]
        paged.physical_to_logical[b, table[b, :used]] = torch.arange(used, device=dev)
    if hasattr(paged, "seq_lens"):  # newer torch bounds each sequence itself; mask_mod below does it too
        paged.seq_lens[:batch] = keys
    if new is not None:  # row pos of sequence b: page table[b, pos / page], offset pos % page
        pos = cached[:, None] + torch.arange(new[0].shape[1], device=dev)
        paged.assign(torch.arange(batch, device=dev), pos, new[0].transpose(1, 2), new[1].transpose(1, 2), k, v)
    sq, softcap = c["seqlen_q"], c.get("softcap", 0.0)
    left, right = c.get("window_left", -1), c.get("window_right", -1)
    slopes = case.inputs("alibi_slopes", like=like) if "alibi_slopes" in names else None

    def mask_mod(b: Any, h: Any, i: Any, j: Any) -> Any:  # j: the key's logical position in sequence b
        # a used page's rows past the sequence's end hold no key; the window bottom-right aligned
        return _window((j >= 0) & (j < keys[b]), i, j, keys[b] - sq, left, right)

    def score_mod(score: Any, b: Any, h: Any, i: Any, j: Any) -> Any:
        if softcap > 0:
            score = softcap * torch.tanh(score / softcap)  # s = c tanh(s / c)
        if slopes is not None:
            score = score + _alibi(slopes[h], i, j, keys[b] - sq)
        return score

    block_mask = create_block_mask(paged.get_mask_mod(mask_mod), batch, c["heads_q"], sq, pages * page, device=dev)
    return k, v, {"scale": c["scale"], "enable_gqa": c["heads_q"] != heads_kv,
                  "score_mod": paged.get_score_mod(score_mod), "block_mask": block_mask}
