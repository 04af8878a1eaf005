"""RMSNorm and LayerNorm forward and backward in NumPy float32, with the fused residual of a flashsim norm case.

A stand-in for a fused norm kernel in the examples and in CI: it computes in float32 (float64 for an fp64 case, as
an fp64 kernel would) straight from the formulas,
independent of flashsim's C++ code, with NumPy's own pairwise reductions (another correct summation order than
the reference's left-to-right one) for the row statistics and for dweight / dbias over rows.
Forward: h = x + residual; RMSNorm: rstd = 1 / sqrt(mean(h^2) + eps), y = h rstd w; LayerNorm: mean = mean(h),
rstd = 1 / sqrt(mean((h - mean)^2) + eps), y = (h - mean) rstd w + b.
Backward: xhat = (h - mean) rstd (mean 0 for RMSNorm), g = dy w, dh = rstd (g - xhat mean(g xhat) - mean(g))
(RMSNorm: no mean(g) term), dx = dresidual = dh, dweight = sum over rows of dy xhat, dbias = sum of dy.
"""
import numpy as np

try:
    import ml_dtypes
except ImportError:  # the manual rounding below
    ml_dtypes = None

# Planted bugs (tests/golden/norm_bugs.py): norm(t, case, bug=name) computes one of them.
BUGS = ("eps_outside_sqrt",  # rstd = 1 / (sqrt(ms) + eps)
        "variance_n_minus_1",  # LayerNorm's variance divided by N - 1
        "dweight_bf16_sum",  # dweight and dbias summed over rows sequentially, rounded to bf16 after each add
        "residual_grad_dropped",  # dresidual not written back (zeros)
        "mean_not_subtracted_in_backward")  # LayerNorm's dh without the - mean(g) term


def round_bf16(a):
    """float32 -> nearest bfloat16 (ties to even), as float32."""
    a = np.asarray(a, np.float32)
    if ml_dtypes is not None:
        return a.astype(ml_dtypes.bfloat16).astype(np.float32)
    b = a.view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000  # add half an ulp of bf16 (less one on an even tie), truncate
    return np.where(np.isnan(a), a, b.astype(np.uint32).view(np.float32))


def _row_sum(t, bug):
    """sum over rows of t [rows, hidden] -> [hidden], in t's float type."""
    if bug == "dweight_bf16_sum":  # acc = bf16(acc + t[r]), row after row
        acc = np.zeros(t.shape[1], np.float32)
        for r in range(t.shape[0]):
            acc = round_bf16(acc + t[r])
        return acc.astype(t.dtype)
    return np.ascontiguousarray(t.T).sum(axis=1, dtype=t.dtype)  # pairwise (NumPy sums the contiguous axis so)


def norm(t, case, bug=None):
    """Returns dict y, rstd, (mean: LayerNorm), (h: residual), dx, dweight, (dbias), (dresidual), float32 (float64
    for an fp64 case): y h dx dresidual [rows, hidden], rstd mean [rows], dweight dbias [hidden]. t holds x weight
    (bias) (residual) dy; case the case's metadata (op rows hidden eps dtype residual)."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}: one of {', '.join(BUGS)}")
    ft = np.float64 if case["dtype"] == "fp64" else np.float32  # the accumulation type
    ln = case["op"] == "layernorm"
    rows, hidden = int(case["rows"]), int(case["hidden"])
    eps = ft(case["eps"])
    x, dy = (t[n].astype(ft).reshape(rows, hidden) for n in ("x", "dy"))
    w = t["weight"].astype(ft).reshape(hidden)
    b = t["bias"].astype(ft).reshape(hidden) if ln else None
    residual = bool(case.get("residual", False))
    h = x + t["residual"].astype(ft).reshape(rows, hidden) if residual else x  # h = x + residual, not rounded
    mean = h.mean(axis=1, dtype=ft, keepdims=True) if ln else np.zeros((rows, 1), ft)  # (1/N) sum_j h_j
    d = h - mean
    n = ft(hidden - 1) if (bug == "variance_n_minus_1" and ln) else ft(hidden)
    with np.errstate(divide="ignore", invalid="ignore"):  # N - 1 = 0 at hidden 1: the bug's own inf / nan
        var = np.sum(d * d, axis=1, dtype=ft, keepdims=True) / n  # (1/N) sum_j (h_j - mean)^2, or mean(h^2)
    if bug == "eps_outside_sqrt":
        rstd = ft(1) / (np.sqrt(var) + eps)  # the bug: 1 / (sqrt(var) + eps)
    else:
        rstd = ft(1) / np.sqrt(var + eps)  # 1 / sqrt(var + eps)
    xhat = d * rstd
    y = xhat * w + (b if ln else ft(0))  # y = xhat w (+ b)
    # backward: dh = rstd (g - xhat mean(g xhat) - mean(g)), g = dy w
    g = dy * w
    dh = g - xhat * (g * xhat).mean(axis=1, dtype=ft, keepdims=True)
    if ln and bug != "mean_not_subtracted_in_backward":
        dh = dh - g.mean(axis=1, dtype=ft, keepdims=True)
    dh = rstd * dh
    out = {"y": y, "rstd": rstd[:, 0]}
    if ln:
        out["mean"] = mean[:, 0]
    if residual:
        out["h"] = h
    out["dx"] = dh
    out["dweight"] = _row_sum(dy * xhat, bug)  # sum over rows of dy xhat
    if ln:
        out["dbias"] = _row_sum(dy, bug)  # sum over rows of dy
    if residual:
        out["dresidual"] = np.zeros_like(dh) if bug == "residual_grad_dropped" else dh
    return {k: np.asarray(v, ft) for k, v in out.items()}
