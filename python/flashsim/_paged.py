"""A KV-cache case's cache as a paged kernel reads it after the append (Case.paged_cache): the pages with k_new /
v_new written in, each sequence's length, and the pages each sequence uses as one list (FlashInfer's form)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._arrays import convert_like


@dataclass(frozen=True)
class PagedCache:
    """k, v: [num_blocks, page_size, heads_kv, d | head_dim_v] (flash_attn_with_kvcache's layout, FlashInfer's
    "NHD") with k_new / v_new written at cache_seqlens (v is None in an MLA case: V is k's first head_dim_v
    columns); lengths: int32 [batch], each sequence's keys after the append; block_table: int32 [batch, max pages]
    as stored; page_size. indptr (int32 [batch + 1]), indices (int32 [indptr[-1]]), last_page_len (int32 [batch]):
    the pages sequence b uses, in order, are indices[indptr[b]:indptr[b + 1]], the last holding last_page_len[b]
    of its keys (FlashInfer's paged_kv_indptr / paged_kv_indices / paged_kv_last_page_len; a sequence with no key
    uses no page and has last_page_len 0)."""

    k: Any
    v: Optional[Any]
    lengths: Any
    block_table: Any
    page_size: int
    indptr: Any
    indices: Any
    last_page_len: Any


def paged_cache(case: Any, like: Any) -> PagedCache:
    names = case.input_names
    if "k_cache" not in names:
        raise ValueError(f"{case.name}: not a KV-cache case (it has {', '.join(names)})")
    raw = case.native.tensor  # as stored (bfloat16 as uint16 bits): the append copies bits
    k = np.array(raw("k_cache"))  # a copy: the append writes into it
    v = np.array(raw("v_cache")) if "v_cache" in names else None
    table = raw("block_table").astype(np.int64)
    cached = raw("cache_seqlens").astype(np.int64)
    page, batch = k.shape[1], table.shape[0]
    new = 0
    if "k_new" in names:  # key position p of sequence b: row p % page of page table[b, p / page]
        new = raw("k_new").shape[1]
        pos = cached[:, None] + np.arange(new)  # [batch, new]
        rows = (table[np.arange(batch)[:, None], pos // page], pos % page)
        k[rows] = raw("k_new")
        if v is not None:
            v[rows] = raw("v_new")
    lengths = cached + new
    used = (lengths + page - 1) // page  # pages each sequence reads
    indptr = np.concatenate([[0], np.cumsum(used)])
    indices = np.concatenate([table[b, :used[b]] for b in range(batch)] + [np.zeros(0, np.int64)])
    last = np.where(used > 0, lengths - (used - 1) * page, 0)

    def i32(a: np.ndarray) -> Any:
        return convert_like(np.ascontiguousarray(a, dtype=np.int32), like)

    return PagedCache(k=convert_like(k, like), v=None if v is None else convert_like(v, like), lengths=i32(lengths),
                      block_table=i32(table), page_size=int(page), indptr=i32(indptr), indices=i32(indices),
                      last_page_len=i32(last))
