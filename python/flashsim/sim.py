"""The tiling simulator from Python: `flashsim sim predict` and `flashsim sim sweep`, the same code and JSON.

    p = flashsim.Problem(batch=2, heads_q=16, seqlen=4096, head_dim=128, causal=True, dtype="bf16")
    flashsim.sim.predict(p, {"block_q": 128, "block_k": 64})["kernels"][0]["time_s"]
    flashsim.sim.sweep(p)            # a pandas DataFrame of the ranked configs when pandas is installed
"""
from __future__ import annotations

import importlib.util
import json
from typing import Any, Optional, Sequence, Union

from . import _native
from ._problem import Problem

DEFAULT_HW = "H100-SXM5-80GB"

ProblemLike = Union[Problem, dict, Any]


def _case_json(problem: ProblemLike) -> str:
    if isinstance(problem, Problem):
        return problem.to_json()
    if isinstance(problem, dict):
        return Problem(**problem).to_json()
    if hasattr(problem, "case_json"):  # a golden Case
        return json.dumps(problem.case_json)
    raise ValueError(f"problem: expected a flashsim.Problem, a dict of its fields or a golden Case, got "
                     f"{type(problem).__name__}")


def hw_profiles() -> list[str]:
    """The hardware profiles' names (flashsim hw list)."""
    return list(_native.hw_profiles())


def predict(problem: ProblemLike, tile: Optional[dict[str, Any]] = None, hw: str = DEFAULT_HW, *,
            algorithm: str = "fa2", pass_: str = "both", kernels: Sequence[str] = (), executed: bool = False,
            max_memory_bytes: int = 0) -> dict[str, Any]:
    """Traffic, occupancy and time of an algorithm's kernels for one tile config, as `flashsim sim predict
    --json`: {"problem", "config", "hw", "fits", "kernels": [{"name", "time_s", "dram_read_bytes", ...}], ...}.

    tile: TileConfig fields (block_q, block_k, warps, stages, q_in_registers, kv_shared_buffer, dq_strategy,
    bwd_block_q, bwd_block_k, num_splits); unset ones keep their defaults (a paged-cache problem: FA2's split-KV
    tile). pass_: fwd, bwd or both. kernels: kernel models by name instead of the algorithm's. executed: run the
    full schedule instead of the closed form. A config that does not fit is reported (fits False), not raised."""
    text = _native.sim_predict(_case_json(problem), dict(tile or {}), hw, algorithm, pass_, list(kernels),
                               executed, max_memory_bytes)
    return json.loads(text)


def sweep(problem: ProblemLike, hw: str = DEFAULT_HW, *, algorithm: str = "fa2", pass_: str = "fwd", top: int = 0,
          frame: Optional[bool] = None) -> Any:
    """Every legal tile config ranked by predicted time, as `flashsim sim sweep --json` (a paged-cache problem:
    FA2's split-KV kernel at each split count). pass_: fwd, bwd, or both ({"fwd": ..., "bwd": ...}, each pass
    ranked on its own). top: rows kept (0: all).

    frame: return a pandas DataFrame of the rows (the other fields in df.attrs); default: when pandas is
    installed. Otherwise the dict, its rows under "ranked" (or "rows" for the split sweep)."""
    result = json.loads(_native.sim_sweep(_case_json(problem), hw, algorithm, pass_, int(top)))
    if frame is None:
        frame = importlib.util.find_spec("pandas") is not None
    if not frame:
        return result
    if "fwd" in result and "bwd" in result:  # pass_="both": one frame per pass
        return {name: _frame(one) for name, one in result.items()}
    return _frame(result)


def _frame(result: dict[str, Any]) -> Any:
    import pandas as pd

    key = "ranked" if "ranked" in result else "rows"
    df = pd.DataFrame(result[key])
    df.attrs.update({k: v for k, v in result.items() if k != key})
    return df
