"""Golden suites from Python: generate or open a suite, iterate its cases, feed a kernel their inputs and verify
its outputs with the suite's tolerance rule (golden/README.md).

    suite = flashsim.golden.Suite("smoke")          # a built-in name: generated once into the cache folder
    for case in suite:
        q, k, v = case.inputs("q", "k", "v", like=torch.empty(0, device="cuda"))
        o, lse = my_kernel(q, k, v, **case.kwargs())
        case.verify(o=o, lse=lse)                    # raises VerificationError with the report on failure

A norm case (suite "norm", case.op "rmsnorm" or "layernorm") works the same way with its own tensors:

    x, w, dy = case.inputs("x", "weight", "dy")
    case.verify(y=y, rstd=rstd, dx=dx, dweight=dw)
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Union

import numpy as np

from . import _native
from ._arrays import convert_like, fp8_format, to_numpy
from ._layout import check_layout, from_case, shape_in, to_case
from ._paged import PagedCache, paged_cache
from ._problem import Problem

PathLike = Union[str, os.PathLike]


def cache_dir() -> Path:
    """Where built-in suites are generated: $FLASHSIM_CACHE, else $XDG_CACHE_HOME/flashsim, else
    ~/.cache/flashsim."""
    if os.environ.get("FLASHSIM_CACHE"):
        return Path(os.environ["FLASHSIM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flashsim"


def builtin_suites() -> list[str]:
    """Names of the built-in suites (smoke, default, long, decode, sparse, ...)."""
    return list(_native.builtin_suites())


def generate(suite: str, out: PathLike, *, threads: int = 0, force: bool = False, progress: bool = True) -> Path:
    """Generates a suite (built-in name or spec file) into the folder `out`, as `flashsim golden generate`
    does (byte-identical files). Returns out. A progress bar goes to stderr unless progress=False."""
    _native.generate_suite(suite, os.fspath(out), threads=threads, force=force, progress=progress)
    return Path(out)


def read_header(path: PathLike) -> dict[str, Any]:
    """A case file's safetensors header without its tensors: tensor name -> {"dtype", "shape", ...}, and
    "__metadata__" holding the case's JSON ("flashsim.case")."""
    with open(path, "rb") as f:  # an 8-byte little-endian header length, then the JSON header
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))


class VerificationError(AssertionError):
    """A kernel's outputs outside the golden bounds; the message is the verification report."""

    def __init__(self, report: "Report") -> None:
        super().__init__(str(report))
        self.report = report


@dataclass(frozen=True)
class OutputResult:
    """One output's verdict: its errors against the exact output and the bounds they must stay under."""

    name: str
    passed: bool
    max_abs: float
    bound_abs: float
    rel_l2: float
    bound_rel: float
    mismatches: int  # elements over bound_abs
    worst_index: str  # "[b1,s37,h0,d27]"
    note: str


class Report:
    """The verification of one case: per-output results, `passed`, and the report text as `flashsim golden
    verify` prints it (str(report))."""

    def __init__(self, report_json: str, text: str) -> None:
        self.json: dict[str, Any] = json.loads(report_json)
        self.text = text
        case = self.json["cases"][0]
        self.case: str = case["name"]
        self.compute_dtype: str = case.get("compute_dtype", "")
        self.outputs: dict[str, OutputResult] = {}
        for o in case["outputs"]:
            self.outputs[o["output"]] = OutputResult(
                name=o["output"], passed=bool(o["ok"]), max_abs=_num(o.get("max_abs")),
                bound_abs=_num(o.get("bound_max_abs")), rel_l2=_num(o.get("rel_l2")),
                bound_rel=_num(o.get("bound_rel_l2")),
                mismatches=int(o.get("mismatches", 0)), worst_index=_worst_text(o.get("worst_index")),
                note=str(o.get("note", "")))
        self.passed: bool = bool(case["ok"])

    @property
    def worst_fraction(self) -> float:
        """The largest error as a fraction of its bound over the outputs checked: max over outputs of
        max(max_abs / bound_abs, rel_l2 / bound_rel); a passing case is <= 1 (nan when no output has a bound)."""
        pairs = [(o.max_abs, o.bound_abs) for o in self.outputs.values()] + \
            [(o.rel_l2, o.bound_rel) for o in self.outputs.values()]
        fractions = [x / b for x, b in pairs if b > 0 and not np.isnan(x)]
        return max(fractions) if fractions else float("nan")

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        state = "pass" if self.passed else "FAIL"
        return f"<Report {self.case}: {state} ({', '.join(self.outputs)})>"


def _worst_text(x: Any) -> str:
    """The worst element's index as text ("[b1,s37,h0,d27]"; "-" without one) from the report's worst_index object."""
    return str(x["text"]) if isinstance(x, dict) else "-"


def _num(x: Any) -> float:
    """A report number: JSON numbers, "inf" / "nan" for non-finite ones, null where undefined (nan)."""
    return float(x) if x is not None else float("nan")


def _norm_features(case: dict[str, Any]) -> frozenset[str]:
    f = {case["dtype"], case["op"], "backward"}
    for name in ("residual", "offset", "outlier_rows", "zero_rows"):
        if case.get(name):
            f.add(name)
    return frozenset(f)


def _features(case: dict[str, Any], has_gradients: bool) -> frozenset[str]:
    if case.get("op", "attention") != "attention":
        return _norm_features(case)
    f = {case["dtype"]}
    left, right = case.get("window_left", -1), case.get("window_right", -1)
    if right == 0:
        f.add("causal")
    if left >= 0 or right > 0:
        f.add("window")
    if case.get("softcap", 0) > 0:
        f.add("softcap")
    for name in ("bias", "mask", "block_mask"):
        if case.get(name, "none") != "none":
            f.add(name)
    if case.get("alibi"):
        f.add("alibi")
    if case.get("sinks"):
        f.add("sinks")
    if case.get("dropout_p", 0) > 0:
        f.add("dropout")
    if case["dtype"] in ("e4m3", "e5m2"):  # FP8 inputs (forward only); "descale" where factors are given
        f.add("fp8")
        if case.get("descale", "none") != "none":
            f.add("descale")
    if case.get("mla"):  # DeepSeek MLA: V is k[..., :head_dim_v] (no v input), dk holds V's gradient (no dv)
        f.add("mla")
    if case.get("seqlens_q"):
        f.add("varlen")
    if case.get("heads_kv", case["heads_q"]) != case["heads_q"]:
        f.add("gqa")
    if case.get("head_dim_v", case["head_dim"]) != case["head_dim"]:
        f.add("head_dim_v")
    if case.get("seqlen_q") != case.get("seqlen_k"):
        f.add("seqlen_q_ne_k")
    if case.get("page_size", 0) > 0:
        f.update({"kv_cache", "paged"})
        if case.get("seqlen_new", 0) > 0:
            f.add("append")
    if case.get("num_splits", 1) > 1:
        f.add("split_kv")
    if has_gradients:
        f.add("backward")
    return frozenset(f)


def _wait_for(result: Any) -> None:
    """Waits until an asynchronous result (torch CUDA tensors, JAX arrays; nested in tuples, lists, dicts) is
    computed."""
    leaves = list(result.values()) if isinstance(result, dict) else \
        list(result) if isinstance(result, (tuple, list)) else [result]
    for x in leaves:
        if isinstance(x, (dict, tuple, list)):
            _wait_for(x)
        elif hasattr(x, "block_until_ready"):
            x.block_until_ready()
        elif getattr(x, "is_cuda", False):
            import torch  # a CUDA tensor: torch is imported already

            torch.cuda.synchronize(x.device)
            return


@contextlib.contextmanager
def _exclusive(path: Optional[str]) -> Iterator[None]:
    """Holds an exclusive lock on the file at path (created if missing) while inside; nothing when path is None."""
    if path is None:
        yield
        return
    import fcntl

    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class Case:
    """One golden case of a suite. Its file is read when first needed (the sha256 checked against the
    manifest) and kept.

    name, description, op (attention, rmsnorm, layernorm), problem (flashsim.Problem; attention cases), dtype,
    features (causal window softcap bias mask block_mask alibi sinks dropout fp8 descale mla varlen gqa head_dim_v
    seqlen_q_ne_k kv_cache paged append split_kv backward and the dtype name; rows_without_keys is computed on demand by
    has_feature; a norm case's: its op, residual offset outlier_rows zero_rows, backward and the dtype name),
    tolerances.
    """

    def __init__(self, suite_dir: Path, entry: dict[str, Any], max_memory_bytes: int = 0) -> None:
        self.suite_dir = suite_dir
        self.name: str = entry["name"]
        self.suite: str = ""  # the suite's name (its manifest's), set by Suite
        self.description: str = entry.get("description", "")
        self.op: str = entry.get("op", "attention")  # the manifest names a norm case's op
        self.file = suite_dir / entry["file"]
        self._max_memory = max_memory_bytes
        self._native: Optional[_native.NativeCase] = None
        self.last_report: Optional[Report] = None  # the last verify()'s
        self.seconds: Optional[float] = None  # the median time of the last timed() call
        self.time_repeats = 0  # timed(): how many timed calls after the first (the plugin's --flashsim-time)
        self.time_lock: Optional[str] = None  # timed(): a file locked around the timed calls (--flashsim-time-lock)

    @classmethod
    def from_file(cls, path: PathLike, max_memory_bytes: int = 0) -> "Case":
        """A single golden file outside a suite folder (no manifest, no sha256 check)."""
        p = Path(path)
        c = cls(p.parent, {"name": p.stem, "file": p.name}, max_memory_bytes)
        c._native = _native.open_file(os.fspath(p), max_memory_bytes)
        c.name = c._native.name
        c.op = c._native.op
        return c

    @property
    def native(self) -> "_native.NativeCase":
        """The loaded file (read on first use)."""
        if self._native is None:
            self._native = _native.open_case(os.fspath(self.suite_dir), self.name, self._max_memory)
        return self._native

    def release(self) -> None:
        """Drops the loaded file (a suite's cases are loaded one at a time by the plugin)."""
        self._native = None

    @property
    def case_json(self) -> dict[str, Any]:
        """The case as stored: the problem's fields (scale resolved), seed, magnitude, name, description."""
        return json.loads(self.native.case_json)

    @property
    def problem(self) -> Problem:
        """The case's attention problem (for flashsim.sim.predict, or its fields as attributes). A norm case has
        none (ValueError): its fields are in case_json."""
        if self.op != "attention":
            raise ValueError(f"{self.name}: a {self.op} case has no attention problem (see case_json)")
        return Problem.from_case_json(self.case_json)

    @property
    def dtype(self) -> str:
        """The inputs' dtype: fp64, fp32, fp16 or bf16."""
        return self.case_json["dtype"]

    @property
    def features(self) -> frozenset[str]:
        """The features the case exercises (the class docstring lists them)."""
        return _features(self.case_json, "dq" in self.native.output_names)

    def describe_features(self) -> str:
        """The case's features but backward, the dtype and an attention case's head dim first ("fp32 d64 causal
        gqa"): a skip reason's words."""
        rest = sorted(self.features - {self.dtype, "backward"})
        dim = [f"d{self.case_json['head_dim']}"] if self.op == "attention" else []
        return " ".join([self.dtype] + dim + rest)

    def has_feature(self, name: str) -> bool:
        """Whether the case has a feature; 'rows_without_keys' (a query row that sees no key: lse -inf, o 0)
        reads the exact lse."""
        if name == "rows_without_keys":  # a norm case has no keys
            return self.op == "attention" and bool(np.isneginf(self.native.expected("lse")).any())
        return name in self.features

    @property
    def tolerances(self) -> dict[str, dict[str, Any]]:
        """compute dtype -> output -> the tolerance record (emulated errors, factor, floors)."""
        return json.loads(self.native.metadata_json).get("tolerances", {})

    @property
    def input_names(self) -> list[str]:
        """The input tensors in the file, in file order."""
        outputs = set(self.native.output_names)
        return [n for n in self.native.tensor_names if n not in outputs]

    @property
    def output_names(self) -> list[str]:
        """The exact outputs the case holds (o lse, and dq dk dv dbias where it has gradients)."""
        return list(self.native.output_names)

    def inputs(self, *names: str, like: Any = None, layout: str = "bshd") -> Any:
        """Input tensors as stored (q, k, v in the case dtype; do; bias, mask, alibi_slopes, sinks, dropout_keep,
        block_mask,
        cu_seqlens_q/k; a KV-cache case's k_cache, v_cache, block_table, cache_seqlens, k_new, v_new; a norm
        case's x, weight, bias, residual, dy). One name:
        the tensor; several: a tuple; none: a dict of all. like: a torch tensor (its device), a JAX or NumPy array
        picks the type returned; bfloat16 arrives as torch.bfloat16 or ml_dtypes.bfloat16. layout: q, k, v and do
        as "bshd" (stored: [batch, seqlen, heads, d], a variable-length case's [total, heads, d]), "bhsd" ([batch,
        heads, seqlen, d]; [1, heads, total, d]) or "tokens" ([batch * seqlen, heads, d]), views where they can be
        (give verify() the outputs in the same layout)."""
        check_layout(layout)
        out = self._select(names, self.input_names, self.native.tensor, like)
        varlen = "cu_seqlens_q" in self.input_names
        if isinstance(out, dict):
            return {n: from_case(x, n, layout, varlen) for n, x in out.items()}
        if len(names) == 1:
            return from_case(out, names[0], layout, varlen)
        return tuple(from_case(x, n, layout, varlen) for n, x in zip(names, out))

    def expected(self, *names: str, like: Any = None) -> Any:
        """Exact outputs (float64): o, lse, and dq, dk, dv (dbias, dsinks) where the case has gradients; a norm
        case's y, (h), rstd, (mean), dx, dweight, (dbias), (dresidual)."""
        return self._select(names, self.output_names, self.native.expected, like)

    def _select(self, names: tuple[str, ...], known: list[str], get: Any, like: Any) -> Any:
        for n in names:
            if n not in known:
                raise ValueError(f"{n}: not in case {self.name} (it has {', '.join(known)})")
        if not names:
            return {n: convert_like(get(n), like) for n in known}
        out = tuple(convert_like(get(n), like) for n in names)
        return out[0] if len(out) == 1 else out

    def kwargs(self, style: str = "flash_attn", like: Any = None, *, takes: Iterable[str] = (),
               sinks: Any = None) -> dict[str, Any]:
        """Keyword arguments for a kernel's call on this case.

        style 'flash_attn': causal, softmax_scale, window_size, softcap, and alibi_slopes (with `like`: as
        that array type), cu_seqlens_q/k and max_seqlen_q/k for a variable-length case (flash_attn_func /
        flash_attn_varlen_func). style 'sdpa' (torch.nn.functional.scaled_dot_product_attention): scale,
        enable_gqa, and is_causal only where it means flashsim's causal (seqlen_q == seqlen_k); otherwise
        attn_mask, a bool [b|1, h|1, sq, sk] mask of the visible keys (window, causal, mask, the block mask's
        tiles expanded) or, with a bias, the additive mask in the case dtype (bias, -inf where hidden). Raises
        ValueError for what SDPA cannot take (softcap, ALiBi, variable lengths, a KV cache, attention sinks,
        dropout). No style carries attention sinks (flash_attn_func has no argument for them): a kernel that takes
        them reads inputs("sinks") (fp32 [heads_q]) and returns dsinks; one that does not declares "sinks"
        unsupported. Nor dropout: flash_attn_func's dropout_p draws its own mask, not the case's; a kernel that
        takes a keep mask reads inputs("dropout_keep") (bool [b, h, sq, sk]) and case_json["dropout_p"]; a kernel
        with only its own RNG declares "dropout" unsupported and checks its kept fraction with
        flashsim.golden.check_keep_fraction. An FP8 case (feature "fp8"): inputs("q", "k", "v") are the e4m3 /
        e5m2 codes as uint8 (view them as torch.float8_e4m3fn / float8_e5m2); style 'flash_attn' adds q_descale,
        k_descale, v_descale as FlashAttention-3 takes them (float32 [batch, heads_kv], a per-tensor factor
        broadcast); 'sdpa', 'jax' and 'flex' refuse it. An MLA case (feature "mla", DeepSeek's latent attention as
        FlashMLA takes it): no v, v_cache or v_new input: V is the first case_json["head_dim_v"] columns of k
        (k_cache, k_new: one compressed cache, FlashMLA's head_dim_v argument), and dk is K's whole gradient (V's
        part in its first head_dim_v columns; no dv output); 'sdpa', 'jax' and 'flex' refuse it.

        takes: features the caller carries itself, lifted from the refusals of 'sdpa', 'jax' and 'flex':
        "dropout" (the caller applies inputs("dropout_keep") and case_json["dropout_p"], e.g. through
        torch.ops.aten._scaled_dot_product_attention_math's dropout_mask) and "mla" (the caller passes
        k[..., :head_dim_v] as v and differentiates k alone). sinks (style 'flex'): a sinks case's fp32 [heads_q]
        tensor, the one the call differentiates for dsinks; the kwargs' score_mod and block_mask are then those of
        seqlen_k + 1 keys, the last one the sink: call flex_attention on k and v with one zero key appended
        (torch.nn.functional.pad(x, (0, 0, 0, 1)) on [b, h, s, d]), every row sees it, and its score is the
        sink's logit, so lse includes the sink and o = 0 where a row sees no other key.

        style 'jax' (jax.nn.dot_product_attention): scale, and is_causal where it means flashsim's causal, else
        mask (bool, the visible keys) and bias (additive, the case dtype); the same refusals as 'sdpa'.
        style 'flex' (torch's flex_attention; needs `like`, a torch tensor): scale, enable_gqa, score_mod (softcap,
        bias, ALiBi) and block_mask (window, causal, mask, block mask, and a variable-length case's sequences as
        documents of one packed batch-1 sequence: give flex_attention the packed tensors as [1, heads, total, d]);
        refuses a KV-cache case (Case.flex_paged gives FlexAttention's paged call for it), attention sinks without
        sinks= and dropout without takes=.

        A norm case: {"eps": eps} whatever the style."""
        c = self.case_json
        if self.op != "attention":
            return {"eps": c["eps"]}
        takes = set(takes)
        if takes - {"dropout", "mla"}:
            raise ValueError(f"takes: {', '.join(sorted(takes - {'dropout', 'mla'}))}: a caller can carry "
                             "dropout and mla itself, no other feature")
        if sinks is not None and style != "flex":
            raise ValueError(f"sinks: only style 'flex' takes the sinks tensor (style '{style}')")
        scale = c["scale"]
        left, right = c.get("window_left", -1), c.get("window_right", -1)
        if style == "flash_attn":
            kw: dict[str, Any] = {"causal": right == 0, "softmax_scale": scale,
                                  "window_size": (left, right), "softcap": c.get("softcap", 0.0)}
            names = self.input_names
            if "alibi_slopes" in names:
                kw["alibi_slopes"] = self.inputs("alibi_slopes", like=like)
            if "cu_seqlens_q" in names:
                kw["cu_seqlens_q"], kw["cu_seqlens_k"] = self.inputs("cu_seqlens_q", "cu_seqlens_k", like=like)
                kw["max_seqlen_q"], kw["max_seqlen_k"] = c["seqlen_q"], c["seqlen_k"]
            if "q_descale" in names:  # [1] or [batch, heads_kv] -> [batch, heads_kv], as flash_attn_func takes them
                shape = (c["batch"], c.get("heads_kv", c["heads_q"]))
                for n in ("q_descale", "k_descale", "v_descale"):
                    d = np.asarray(self.inputs(n))
                    kw[n] = convert_like(np.ascontiguousarray(np.broadcast_to(d.reshape(-1)[0] if d.size == 1 else d,
                                                                              shape)), like)
            return kw
        if style == "flex":
            from ._flex import flex_kwargs

            return flex_kwargs(self, like, takes, sinks)
        if style not in ("sdpa", "jax"):
            raise ValueError(f"style: '{style}': expected 'flash_attn', 'sdpa', 'jax' or 'flex'")
        unsupported = sorted(self.features & ({"softcap", "alibi", "sinks", "dropout", "fp8", "mla", "varlen",
                                               "kv_cache"} - takes))
        if unsupported:
            raise ValueError(f"{self.name}: {style.upper()} has no argument for {', '.join(unsupported)}")
        kw = {"scale": scale} if style == "jax" else \
            {"scale": scale, "enable_gqa": c["heads_q"] != c.get("heads_kv", c["heads_q"])}
        has_bias, has_mask = c.get("bias", "none") != "none", c.get("mask", "none") != "none"
        plain_causal = right == 0 and left < 0 and c["seqlen_q"] == c["seqlen_k"]
        if plain_causal and not has_mask and not has_bias and "block_mask" not in self.input_names:
            kw["is_causal"] = True
            return kw
        if right < 0 and left < 0 and not has_mask and not has_bias and "block_mask" not in self.input_names:
            return kw
        visible = self._visible()
        if style == "jax":
            kw["mask"] = convert_like(visible, like)
            if has_bias:
                kw["bias"] = self.inputs("bias", like=like)
            return kw
        if c.get("bias", "none") != "none":
            bias = self.inputs("bias")
            attn = np.where(visible, bias.astype(np.float32), -np.inf).astype(bias.dtype)
        else:
            attn = visible
        kw["attn_mask"] = convert_like(attn.view(np.uint16) if attn.dtype.name == "bfloat16" else attn, like)
        return kw

    def flex_paged(self, like: Any) -> tuple[Any, Any, dict[str, Any]]:
        """A KV-cache case for FlexAttention's paged attention (torch's experimental PagedAttention; `like` a torch
        tensor): (k, v, kwargs), the cache in its layout [1, heads_kv, num_blocks * page_size, d] with k_new /
        v_new written at cache_seqlens, and flex_attention's scale, enable_gqa, score_mod and block_mask over it
        (logical key positions through its page maps: windows and causal bottom-right per sequence, softcap,
        ALiBi). Call flex_attention(q as [b, heads_q, seqlen_q, d], k, v, **kwargs); o and lse come back in
        [b, heads_q, seqlen_q, .]. ValueError for a case without a cache, with sinks, MLA or FP8 inputs."""
        from ._flex import flex_paged

        return flex_paged(self, like)

    def paged_cache(self, like: Any = None) -> PagedCache:
        """A KV-cache case's cache as a paged kernel reads it once k_new / v_new are appended (what
        flash_attn_with_kvcache writes before attending), as arrays of `like`'s kind and device: k, v [num_blocks,
        page_size, heads_kv, d] (FlashInfer's "NHD"; v None in an MLA case), lengths (int32 [batch], keys after the
        append), block_table, page_size, and the pages each sequence uses as one list: indptr, indices,
        last_page_len (FlashInfer's paged_kv_indptr / _indices / _last_page_len). ValueError without a cache."""
        return paged_cache(self, like)

    def _visible(self) -> np.ndarray:
        """Bool [b|1, h|1, sq, sk]: the window (bottom-right aligned), the boolean mask and the block mask."""
        c = self.case_json
        sq, sk = c["seqlen_q"], c["seqlen_k"]
        i = np.arange(sq)[:, None]
        j = np.arange(sk)[None, :]
        left, right = c.get("window_left", -1), c.get("window_right", -1)
        vis = np.ones((sq, sk), dtype=bool)
        if left >= 0:
            vis &= j >= i + sk - sq - left
        if right >= 0:
            vis &= j <= i + sk - sq + right
        vis = vis[None, None]
        if "mask" in self.input_names:
            vis = vis & self.inputs("mask").astype(bool)
        if "block_mask" in self.input_names:  # the tiles expanded: query i, key j in tile (i / block_q, j / block_k)
            tiles = self.inputs("block_mask").astype(bool)
            vis = vis & tiles[:, :, (i // c["block_q"])[:, 0], :][:, :, :, (j // c["block_k"])[0]]
        return vis

    def timed(self, fn: Callable[[], Any], repeats: Optional[int] = None) -> Any:
        """Calls fn() and returns its result; when repeats (default: time_repeats, which the plugin's
        --flashsim-time sets) is above 0, calls it that many more times, each waited for (a torch CUDA
        synchronize, JAX's block_until_ready) and timed by the wall clock, and keeps the median in
        `seconds`. Put the kernel's whole call in fn (forward and backward, where it has one). With time_lock (a
        path) the timed calls hold an exclusive lock on that file (fcntl.flock): processes sharing a GPU time
        one at a time."""
        result = fn()
        _wait_for(result)
        n = self.time_repeats if repeats is None else repeats
        if n > 0:
            with _exclusive(self.time_lock):
                times = []
                for _ in range(n):
                    start = time.perf_counter()
                    _wait_for(fn())
                    times.append(time.perf_counter() - start)
            self.seconds = statistics.median(times)
        return result

    def with_grads(self, forward: Callable[[], Any], leaves: dict[str, Any], cotangent: Any) -> Callable[[], dict]:
        """torch: a zero-argument call for timed() running forward() (o, or (o, lse)) and, where the case checks
        gradients, torch.autograd.grad of o against `cotangent` (do) for each of `leaves` ({input name: tensor})
        whose gradient the case holds; it returns {"o", "lse" where forward gives it, "d" + name for those leaves},
        verify()'s keywords. The leaves that get a gradient are made to require one here. cotangent may be None for
        a case without gradients (a forward-only case holds no do)."""
        wanted = {n: t for n, t in leaves.items() if "d" + n in self.output_names}
        if wanted and cotangent is None:
            raise ValueError(f"cotangent: None, but case {self.name} holds {', '.join('d' + n for n in wanted)}")
        missing = [n for n, t in wanted.items() if t is None]
        if missing:
            raise ValueError(f"leaves: {', '.join(missing)} given as None, but case {self.name} holds "
                             f"{', '.join('d' + n for n in missing)}")
        for t in wanted.values():
            t.requires_grad_()

        def call() -> dict:
            out = forward()
            o, rest = (out[0], out[1:]) if isinstance(out, (tuple, list)) else (out, ())
            result = {"o": o, **({"lse": rest[0]} if rest else {})}
            if wanted:
                import torch

                grads = torch.autograd.grad(o, list(wanted.values()), cotangent)
                result.update({"d" + n: g for n, g in zip(wanted, grads)})
            return result

        return call

    def verify(self, *, compute: Optional[str] = None, raise_on_failure: bool = True, layout: str = "bshd",
               lse_base: float = 0.0, output_scale: Optional[Dict[str, float]] = None, **outputs: Any) -> Report:
        """Verifies the given outputs (o=..., lse=..., dq=..., any array type and device) with the suite's rule for
        compute dtype `compute` (default: the case's). layout: the outputs' ("bshd", the case's own; "bhsd";
        "tokens": o and gradients [batch * seqlen, heads, d], lse [batch * seqlen_q, heads]; see inputs()).
        lse_base: the base of the kernel's lse where it is not e (2: FlashInfer's and FlashAttention-3's log2
        lse; multiplied by ln 2 here). An FP8 output (torch's, JAX's or ml_dtypes' float8_e4m3fn / float8_e5m2,
        as cuDNN's FP8 attention returns o) is taken as stored: its values divided by output_scale[name] (the
        kernel's scale factor, o_fp8 = o x scale_o; default 1), its floors those of the FP8 grid at that scale.
        Returns the Report; raises VerificationError (an AssertionError: a failed pytest test showing the
        report) when an output fails and raise_on_failure is set."""
        check_layout(layout)
        if layout != "bshd" and self.op != "attention":
            raise ValueError(f"layout '{layout}': a {self.op} case's tensors have one layout")
        if lse_base < 0 or lse_base == 1:
            raise ValueError(f"lse_base: {lse_base}: a logarithm's base is positive and not 1 (0: natural)")
        scales = dict(output_scale or {})
        stored = {name: (fp8_format(value), float(scales.pop(name, 1.0)))
                  for name, value in outputs.items() if fp8_format(value)}
        if scales:
            raise ValueError(f"output_scale: {', '.join(sorted(scales))}: not an FP8 output given (a scale factor "
                             f"belongs to an output stored in FP8)")
        varlen = "cu_seqlens_q" in self.input_names
        header = read_header(self.file) if layout != "bshd" else {}  # the stored shapes, no tensor copied
        for name, value in outputs.items():  # a shape error in the caller's layout, not in the case's
            if name in header and name in self.output_names and hasattr(value, "shape"):
                want = shape_in(header[name]["shape"], name, layout, varlen)
                if tuple(value.shape) != want:
                    raise ValueError(f"output '{name}' has shape {list(value.shape)}; in layout '{layout}' the case "
                                     f"needs {list(want)}")
        arrays = {name: to_numpy(to_case(value, name, layout, varlen, self.case_json.get("batch", 1)), name)
                  for name, value in outputs.items()}
        if lse_base and "lse" in arrays:  # ln(x) = log_b(x) ln(b)
            lse = arrays["lse"]  # scaled in float64, kept in the kernel's float type (its rounding, not ours)
            arrays["lse"] = (lse.astype(np.float64) * np.log(lse_base)).astype(lse.dtype if lse.dtype.kind == "f" else
                                                                               np.float64)
        report = Report(*self.native.verify(arrays, compute, stored))
        self.last_report = report
        if raise_on_failure and not report.passed:
            raise VerificationError(report)
        return report

    def __repr__(self) -> str:
        return f"<Case {self.name}: {self.description}>"


class Suite:
    """A golden suite: a folder with manifest.json (a path), or a built-in name / spec file, generated into
    cache_dir() on first use (flashsim golden generate's files, byte for byte).

    Iterating gives Case objects in suite order; suite["name"] or suite[i] one case; select(regex) those whose
    name matches (re.search)."""

    def __init__(self, name_or_path: PathLike, *, threads: int = 0, progress: bool = True,
                 max_memory_bytes: int = 0) -> None:
        path = Path(name_or_path)
        if path.is_dir():
            if not (path / "manifest.json").is_file():
                raise ValueError(f"{path}: not a golden suite folder (no manifest.json)")
            self.path = path
        else:
            spec = os.fspath(name_or_path)
            if spec not in builtin_suites() and not path.is_file():
                raise ValueError(f"suite: '{spec}' is neither a suite folder, a spec file nor a built-in suite "
                                 f"({', '.join(builtin_suites())})")
            sha = _native.suite_spec_sha256(spec)
            self.path = cache_dir() / "golden" / f"{path.stem}-{sha[:16]}"
            if not (self.path / "manifest.json").is_file():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    generate(spec, self.path, threads=threads, progress=progress)
                except ValueError:
                    # Another process generated it meanwhile (the folder appears complete, by rename).
                    if not (self.path / "manifest.json").is_file():
                        raise
        with open(self.path / "manifest.json") as f:
            self.manifest: dict[str, Any] = json.load(f)
        self.name: str = self.manifest["suite"]
        self._max_memory = max_memory_bytes
        self.cases = [Case(self.path, e, max_memory_bytes) for e in self.manifest["cases"]]
        for c in self.cases:
            c.suite = self.name

    @property
    def names(self) -> list[str]:
        """The case names in suite order."""
        return [c.name for c in self.cases]

    def select(self, pattern: Optional[str] = None) -> list[Case]:
        """The cases whose name matches the regular expression (re.search; None: all)."""
        if pattern is None:
            return list(self.cases)
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"filter: '{pattern}' is not a regular expression: {e}") from None
        return [c for c in self.cases if rx.search(c.name)]

    def __iter__(self) -> Iterator[Case]:
        """The cases in suite order."""
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, key: Union[int, str]) -> Case:
        if isinstance(key, int):
            return self.cases[key]
        for c in self.cases:
            if c.name == key:
                return c
        raise KeyError(f"no case '{key}' in suite {self.name}")

    def __repr__(self) -> str:
        return f"<Suite {self.name}: {len(self)} cases in {self.path}>"


@dataclass
class KeepFractionCheck:
    """A dropout RNG's kept fraction against the binomial bound at a false-alarm rate (check_keep_fraction)."""

    ok: bool
    kept: int
    n: int
    fraction: float
    lo: float
    hi: float
    z_score: float
    method: str  # "normal" (z-bound with continuity correction), "hoeffding" (small n p (1 - p)) or "exact" (p 0)


def check_keep_fraction(keep_mask: Any, p: float, false_alarm: float = 1e-6,
                        visible: Any = None) -> KeepFractionCheck:
    """Checks a kernel's own dropout mask (any array type; != 0 kept), e.g. flash-attention's returned S_dmask's
    sign, without a golden: kept ~ Binomial(n, 1 - p), and a correct RNG fails with probability false_alarm
    (flashsim/dropout_check.h: |kept / n - (1 - p)| <= z sqrt(p (1 - p) / n) + 1 / (2 n), z = Phi^-1(1 -
    alpha / 2), when n p (1 - p) >= 10; Hoeffding's bound below). visible: a bool mask of the entries that count
    (e.g. those the causal mask leaves), default all."""
    mask = to_numpy(keep_mask, "keep_mask") != 0
    if visible is not None:
        mask = mask[np.broadcast_to(to_numpy(visible, "visible").astype(bool), mask.shape)]
    kept, n = int(np.count_nonzero(mask)), int(mask.size)
    ok, fraction, lo, hi, z, method = _native.check_keep_fraction(kept, n, float(p), float(false_alarm))
    return KeepFractionCheck(bool(ok), kept, n, fraction, lo, hi, z, method)
