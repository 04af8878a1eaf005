"""flashsim.Problem: one attention problem, with the fields of a golden suite spec."""
from __future__ import annotations

import json
from typing import Any

from . import _native


class Problem:
    """An attention problem: the fields of a suite spec case (golden/README.md), validated by the C++ core.

    Problem(batch=2, heads_q=16, heads_kv=4, seqlen=4096, head_dim=128, causal=True, dtype="bf16"); also
    window_left / window_right, softcap, bias / mask ("bhqk", "1hqk", "b1qk", "11qk"), alibi, seqlens_q /
    seqlens_k (variable lengths), page_size / cache_seqlens / seqlen_new / num_blocks (a paged KV cache),
    block_mask / block_q / block_k / block_mask_spec, mla (DeepSeek's latent attention: heads_kv 1, head_dim 576,
    head_dim_v 512 unless given), and seed (of the generated inputs and block mask).
    Unset fields take their defaults; the completed fields are `fields`, read as attributes.
    """

    def __init__(self, **fields: Any) -> None:
        fields.setdefault("name", "problem")
        self._given = json.dumps(fields)  # what the C++ core reads: unset fields stay its defaults
        text, self.description = _native.normalize_case(self._given)
        self.fields: dict[str, Any] = json.loads(text)

    @classmethod
    def from_case_json(cls, case: dict[str, Any]) -> "Problem":
        """The problem of a golden case (its case JSON)."""
        return cls(**case)

    def to_json(self) -> str:
        """The fields as given (a default scale stays unset, so descriptions match the command line's)."""
        return self._given

    def __getattr__(self, name: str) -> Any:
        """A field's completed value: problem.heads_kv, problem.scale, ..."""
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"Problem({self.description})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and self.fields == other.fields

    __hash__ = None  # type: ignore[assignment]
