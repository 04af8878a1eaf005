"""Arrays in and out of the native module.

In: NumPy arrays (bfloat16 from ml_dtypes), torch CPU tensors and JAX arrays (through DLPack), anything else
NumPy can turn into an array. A bfloat16 NumPy array crosses as its uint16 bit patterns (NumPy's DLPack has no
bfloat16); the native side reads uint16 float inputs as bfloat16 bits.
Out: the native module returns NumPy arrays, bfloat16 as uint16 bits; they are viewed as ml_dtypes.bfloat16,
or handed to torch without a copy when the caller passed torch tensors.
"""
from __future__ import annotations

from typing import Any, Optional

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)


def framework(x: Any) -> str:
    """'torch', 'jax', 'numpy' or 'other', by the type's module (nothing is imported)."""
    if x is None:
        return "other"
    module = type(x).__module__.split(".")[0]
    if module == "torch":
        return "torch"
    if module in ("jax", "jaxlib"):
        return "jax"
    if isinstance(x, np.ndarray):
        return "numpy"
    return "other"


def to_native(x: Any, name: str) -> Any:
    """An argument the native module accepts, without copying where the input already is a CPU array."""
    if x is None:
        return None
    kind = framework(x)
    if kind == "torch":
        if x.device.type != "cpu":
            raise ValueError(f"{name}: a tensor on {x.device}; flashsim computes on the CPU: pass {name}.cpu()")
        return x.detach()
    if kind == "jax":
        platforms = sorted({d.platform for d in x.devices()})
        if platforms != ["cpu"]:
            raise ValueError(f"{name}: a JAX array on {', '.join(platforms)}; flashsim computes on the CPU: pass "
                             f"jax.device_get({name})")
        return x  # read through DLPack by the native module
    if kind == "other" and hasattr(x, "__dlpack__"):
        return x
    a = x if isinstance(x, np.ndarray) else np.asarray(x)
    if a.dtype == BF16:
        return a.view(np.uint16)
    return a


def from_native(a: np.ndarray | None, like: str = "numpy") -> Any:
    """A native result as the caller's array type: NumPy (bfloat16 via ml_dtypes) or torch (no copy)."""
    if a is None:
        return None
    bf16 = a.dtype == np.uint16
    if like == "torch":
        import torch

        t = torch.from_numpy(a.view(np.int16) if bf16 else a)
        return t.view(torch.bfloat16) if bf16 else t
    return a.view(BF16) if bf16 else a


def convert_like(a: np.ndarray, like: Any) -> Any:
    """A stored tensor (bfloat16 as uint16 bits) as an array of the same kind, and device, as `like`."""
    bf16 = a.dtype == np.uint16
    kind = framework(like)
    if kind == "torch":
        import torch

        t = torch.from_numpy(np.ascontiguousarray(a.view(np.int16) if bf16 else a))
        if bf16:
            t = t.view(torch.bfloat16)
        return t.to(like.device)
    if kind == "jax":
        import jax.numpy as jnp

        return jnp.asarray(a.view(BF16) if bf16 else a)
    return a.view(BF16) if bf16 else a


def fp8_format(x: Any) -> Optional[str]:
    """'e4m3' or 'e5m2' for an FP8 array (torch's float8_e4m3fn / float8_e5m2, JAX's and ml_dtypes' of the same
    names), None for any other."""
    name = str(getattr(x, "dtype", ""))
    return "e4m3" if "float8_e4m3fn" in name else "e5m2" if "float8_e5m2" in name else None


def to_numpy(x: Any, name: str) -> np.ndarray:
    """Any array (torch on any device, JAX, NumPy) as a NumPy array on the CPU, bfloat16 as uint16 bits, FP8 as
    the float32 values of its codes (exact: every FP8 value is a float32)."""
    kind = framework(x)
    if kind == "torch":
        import torch

        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.float().numpy() if fp8_format(t) else t.numpy()
    a = np.asarray(x)
    if fp8_format(a):
        return a.astype(np.float32)
    return a.view(np.uint16) if a.dtype == BF16 else a
