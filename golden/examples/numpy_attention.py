"""Attention forward and backward in NumPy float32, with every feature of a flashsim golden case.

A stand-in for a GPU kernel in the examples and in CI: it computes in float32 (a kernel's accumulation
precision) straight from the formulas, one (sequence, head) at a time, independent of flashsim's C++ code.
Score pipeline (docs/design.md): s = scale q.k; softcap c: s = c tanh(s/c); s += bias + ALiBi; window and boolean
masks (bottom-right aligned); softmax, with an attention sink's logit in the denominator where the case has
sinks; dropout by the case's keep mask (p' = p keep / (1 - p_drop), lse without it); o = p' v.

FP8 cases (dtype e4m3 / e5m2; forward only) follow an FP8 kernel's pipeline (FlashAttention-3's): s = (q.k) in
float32 times scale * q_descale * k_descale; P = 2^8 e^(s - m) rounded to the case's FP8 format (round to nearest
even, saturating; ml_dtypes when installed, else round_fp8 below); P V in float32, times v_descale / l with l the
row sum of the unrounded P; lse = m + log(l / 2^8); o rounded to bfloat16.

MLA cases (case["mla"]: DeepSeek's latent attention) store no v, v_cache or v_new: V is the first head_dim_v
columns of K (k, k_cache, k_new), as FlashMLA reads one compressed cache; dK then holds V's gradient too (dV added
into its first head_dim_v columns) and there is no dv output.
"""
import numpy as np

try:
    import ml_dtypes  # noqa: F401  (optional: its FP8 types, when installed)
except ImportError:
    ml_dtypes = None


def round_fp8(x, fmt):
    """Rounds float values to OCP FP8 e4m3 / e5m2 (nearest, ties to even; beyond the largest finite value,
    infinities included, to +-max; NaN stays NaN), as float32. The spacing of the values around |x| is
    2^(E - mantissa bits), E = floor(log2 |x|) no lower than the smallest normal exponent (subnormals)."""
    if ml_dtypes is not None:
        big = 448.0 if fmt == "e4m3" else 57344.0
        t = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
        return np.clip(np.asarray(x, np.float32), -big, big).astype(t).astype(np.float32)
    man_bits, emin, big = (3, -6, 448.0) if fmt == "e4m3" else (2, -14, 57344.0)
    a = np.abs(np.asarray(x, np.float64))
    _, e2 = np.frexp(a)  # a = f 2^e2, f in [0.5, 1)
    q = np.ldexp(1.0, np.maximum(e2 - 1, emin) - man_bits)
    with np.errstate(invalid="ignore"):
        r = np.minimum(np.rint(a / q) * q, big)  # np.rint: ties to even; inf / q = inf -> big
    return np.copysign(r, x).astype(np.float32)


def round_bf16(x):
    """float32 -> the nearest bfloat16 (ties to even), as float32 (finite values)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _visible(case, lq, lk):
    i = np.arange(lq)[:, None]
    j = np.arange(lk)[None, :]
    shift = lk - lq  # bottom-right alignment
    vis = np.ones((lq, lk), dtype=bool)
    if case["window_left"] >= 0:
        vis &= j >= i + shift - case["window_left"]
    if case["window_right"] >= 0:
        vis &= j <= i + shift + case["window_right"]
    return vis


def _slice(t, b, h, lq, lk):
    """The [lq, lk] corner of a broadcast [B|1, H|1, Sq, Sk] bias or mask for sequence b, head h."""
    return t[b if t.shape[0] > 1 else 0, h if t.shape[1] > 1 else 0, :lq, :lk]


def _gather_cache(t):
    """A KV-cache case's keys per sequence (after appending k_new / v_new), packed: k, v [total_k, heads, d]
    and the key offsets. Key j of sequence b is row j % page of page block_table[b, j // page]."""
    kc, vc, table, lens = t["k_cache"], t["v_cache"], t["block_table"], t["cache_seqlens"]
    page = kc.shape[1]
    ks, vs, offsets = [], [], [0]
    for b in range(table.shape[0]):
        j = np.arange(int(lens[b]))
        ks.append(kc[table[b, j // page], j % page])
        vs.append(vc[table[b, j // page], j % page])
        if "k_new" in t:
            ks.append(t["k_new"][b])
            vs.append(t["v_new"][b])
        offsets.append(offsets[-1] + int(lens[b]) + (t["k_new"].shape[1] if "k_new" in t else 0))
    return np.concatenate(ks), np.concatenate(vs), offsets


def _block_keep(block_mask, case, b, h, lq, lk):
    """The [lq, lk] element view of a block mask [B|1, H|1, q blocks, k blocks] for sequence b, head h."""
    m = _slice(block_mask, b, h, block_mask.shape[2], block_mask.shape[3])
    i = np.arange(lq)[:, None] // case["block_q"]
    j = np.arange(lk)[None, :] // case["block_k"]
    return m[i, j] != 0


# Planted bugs (tests/golden/attention_bugs.py): what each changes.
BUGS = {
    "sink_missing_from_lse": "lse = log sum_j e^(s_j), without the sink's e^(s_h) (o, gradients right)",
    "sink_missing_from_output": "P = e^(s_j) / sum_k e^(s_k) in o and the gradients (lse right)",
    "dsinks_sign": "dsinks = +sum_i P_sink D_i (the sign flipped)",
    "dropout_scaled_by_1_minus_p": "P' = P keep (1 - p) instead of P keep / (1 - p)",
    "dropout_missing_in_backward": "dP = dO V^T without the keep mask and 1 / (1 - p) (forward right)",
    "descale_applied_twice": "FP8: q, k and v multiplied by their descales twice (S by (q_d k_d)^2, O by v_d^2)",
    "per_tensor_descale_for_per_head": "FP8: the first descale (a per-tensor kernel's) used for every (batch, kv head)",
    "p_offset_not_undone": "FP8: P = 2^8 e^(s - m) but the row sum not divided by 2^8 in the lse (lse + 8 ln 2)",
    "mla_rope_dropped": "MLA: scores from the latent part alone, q[:, :d_latent] . k[:, :d_latent] (the rotary part "
                        "dropped)",
}


def _mla_values(t, case):
    """An MLA case's tensors with V as the view of K the case means: v (v_cache, v_new) = k[..., :head_dim_v]."""
    t = dict(t)
    dv = case["head_dim_v"]
    for kn, vn in (("k", "v"), ("k_cache", "v_cache"), ("k_new", "v_new")):
        if kn in t:
            t[vn] = t[kn][..., :dv]
    return t


def _descale(t, name, b, hkv, bug):
    """The descale factor of (sequence b, kv head hkv): [1] per tensor, [batch, heads_kv] per head; 1 without."""
    d = t.get(name)
    if d is None:
        return np.float32(1)
    if d.size == 1 or bug == "per_tensor_descale_for_per_head":
        return np.float32(d.reshape(-1)[0])
    return np.float32(d[b, hkv])


def _attention_fp8(t, case, bug):
    """An FP8 case's forward (the module's docstring): o (bfloat16 values) and lse, in the golden layouts."""
    f32 = np.float32
    fmt = case["dtype"]
    q, k, v = (t[n].astype(f32) for n in ("q", "k", "v"))  # the stored FP8 values
    varlen = "cu_seqlens_q" in t
    if varlen:
        cq, ck = t["cu_seqlens_q"].astype(np.int64), t["cu_seqlens_k"].astype(np.int64)
        seqs = [(cq[b], cq[b + 1], ck[b], ck[b + 1]) for b in range(len(cq) - 1)]
        q4, k4, v4 = q, k, v
    else:
        B, Sq, Sk = q.shape[0], q.shape[1], k.shape[1]
        seqs = [(b * Sq, (b + 1) * Sq, b * Sk, (b + 1) * Sk) for b in range(B)]
        q4, k4, v4 = (x.reshape(-1, x.shape[2], x.shape[3]) for x in (q, k, v))
    hq, hk = q4.shape[1], k4.shape[1]
    group = hq // hk
    scale, cap = f32(case["scale"]), f32(case["softcap"])
    mask, sinks = t.get("mask"), t.get("sinks")
    slopes = t.get("alibi_slopes")
    o = np.zeros((q4.shape[0], hq, v4.shape[2]), f32)
    lse = np.full((hq, q4.shape[0]), -np.inf, f32)
    times = 2 if bug == "descale_applied_twice" else 1
    offset = f32(256)  # 2^8: FlashAttention-3's Max_offset for FP8
    for b, (q0, q1, k0, k1) in enumerate(seqs):
        lq, lk = q1 - q0, k1 - k0
        if lq == 0:
            continue
        vis = _visible(case, lq, lk)
        for h in range(hq):
            hkv = h // group
            qd, kd, vd = (_descale(t, n, b, hkv, bug) ** times for n in ("q_descale", "k_descale", "v_descale"))
            Q, K, V = q4[q0:q1, h], k4[k0:k1, hkv], v4[k0:k1, hkv]
            raw = (Q @ K.T) * f32(scale * qd * kd)
            s = cap * np.tanh(raw / cap) if cap > 0 else raw
            if slopes is not None:
                i = np.arange(lq)[:, None]
                j = np.arange(lk)[None, :]
                s = s - f32(slopes[h]) * np.abs(i + lk - lq - j).astype(f32)
            keep = vis if mask is None else vis & (_slice(mask, b, h, lq, lk) != 0)
            s = np.where(keep, s, -np.inf).astype(f32)
            m = s.max(axis=1, keepdims=True) if lk > 0 else np.full((lq, 1), -np.inf, f32)
            if sinks is not None:  # a row without keys: the max is the sink's (finite sinks)
                m = np.where(np.isfinite(m), m, f32(sinks[h]))
            empty = ~np.isfinite(m[:, 0])
            m = np.where(np.isfinite(m), m, 0).astype(f32)
            p = (offset * np.exp(s - m)).astype(f32)  # in [0, 256]: m is the keys' max
            l = p.sum(axis=1, keepdims=True)  # from the unrounded P
            if sinks is not None:  # the sink joins the row sum once the keys are done, as a kernel folds it
                l = l + offset * np.exp(f32(sinks[h]) - m)
            acc = round_fp8(p, fmt) @ V  # fp32 accumulation of FP8 products
            o[q0:q1, h] = round_bf16(np.where(l > 0, acc * (vd / np.where(l > 0, l, 1)), 0).astype(f32))
            l_lse = l if bug == "p_offset_not_undone" else l / offset
            with np.errstate(divide="ignore"):
                lse[h, q0:q1] = np.where(empty, -np.inf, m[:, 0] + np.log(l_lse[:, 0]))
    if not varlen:
        B, Sq = q.shape[0], q.shape[1]
        o = o.reshape(B, Sq, hq, -1)
        lse = lse.reshape(hq, B, Sq).transpose(1, 0, 2)
    return {"o": o, "lse": np.ascontiguousarray(lse)}


def attention(t, case, dv_product=None, bug=None):
    """Returns dict o, lse, dq, dk, dv (and dbias, dsinks), float32, in the golden file's layouts; o and lse only
    for a KV-cache or FP8 case (no backward). dv_product(p, dO) replaces dV's P^T dO for one (sequence, head) (a
    kernel's own accumulation order, or a planted bug: bench/planted_bugs/); bug: one of BUGS, planted."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug '{bug}' (known: {', '.join(BUGS)})")
    if case["dtype"] in ("e4m3", "e5m2"):
        return _attention_fp8(t, case, bug)
    mla = case.get("mla", False)
    if mla:
        t = _mla_values(t, case)
    f32 = np.float32
    cache = "k_cache" in t
    if cache:
        t = dict(t)
        k_all, v_all, ko = _gather_cache(t)
        t["k"], t["v"] = k_all, v_all
        t["do"] = np.zeros(t["q"].shape[:3] + (v_all.shape[2],), f32)
    q, k, v, do = (t[n].astype(f32) for n in ("q", "k", "v", "do"))
    block_mask = t.get("block_mask")
    varlen = "cu_seqlens_q" in t
    if cache:
        B, Sq = q.shape[0], q.shape[1]
        seqs = [(b * Sq, (b + 1) * Sq, ko[b], ko[b + 1]) for b in range(B)]
        q4, do4 = (x.reshape(-1, x.shape[2], x.shape[3]) for x in (q, do))
        k4, v4 = k, v
    elif varlen:
        cq, ck = t["cu_seqlens_q"].astype(np.int64), t["cu_seqlens_k"].astype(np.int64)
        seqs = [(cq[b], cq[b + 1], ck[b], ck[b + 1]) for b in range(len(cq) - 1)]
        q4, k4, v4, do4 = q, k, v, do  # [total, heads, dim]
    else:
        B, Sq, Sk = q.shape[0], q.shape[1], k.shape[1]
        seqs = [(b * Sq, (b + 1) * Sq, b * Sk, (b + 1) * Sk) for b in range(B)]
        q4, k4, v4, do4 = (x.reshape(-1, x.shape[2], x.shape[3]) for x in (q, k, v, do))
    hq, hk = q4.shape[1], k4.shape[1]
    group = hq // hk
    scale, cap = f32(case["scale"]), f32(case["softcap"])
    bias = t.get("bias")
    mask = t.get("mask")
    slopes = t.get("alibi_slopes")
    sinks = t.get("sinks")
    keep_mask = t.get("dropout_keep")  # [B, H, Sq, Sk], top-left corner per sequence
    p_drop = case.get("dropout_p", 0.0)
    if bug == "dropout_scaled_by_1_minus_p":
        z_scale = f32(1 - p_drop)
    else:
        z_scale = f32(1 / (1 - p_drop))
    o = np.zeros(do4.shape, f32)
    dq = np.zeros(q4.shape, f32)
    dk = np.zeros(k4.shape, f32)
    dv = np.zeros(v4.shape, f32)
    total_q = q4.shape[0]
    lse = np.full((hq, total_q), -np.inf, f32)
    dbias = np.zeros(bias.shape, f32) if bias is not None else None
    dsinks = np.zeros(sinks.shape, f32) if sinks is not None else None
    for b, (q0, q1, k0, k1) in enumerate(seqs):
        lq, lk = q1 - q0, k1 - k0
        if lq == 0:
            continue
        vis = _visible(case, lq, lk)
        for h in range(hq):
            hkv = h // group
            Q, K, V, dO = q4[q0:q1, h], k4[k0:k1, hkv], v4[k0:k1, hkv], do4[q0:q1, h]
            if bug == "mla_rope_dropped":
                raw = scale * (Q[:, : V.shape[1]] @ K[:, : V.shape[1]].T)
            else:
                raw = scale * (Q @ K.T)
            s = cap * np.tanh(raw / cap) if cap > 0 else raw
            if bias is not None:
                s = s + _slice(bias, b, h, lq, lk).astype(f32)
            if slopes is not None:
                i = np.arange(lq)[:, None]
                j = np.arange(lk)[None, :]
                s = s - f32(slopes[h]) * np.abs(i + lk - lq - j).astype(f32)
            keep = vis if mask is None else vis & (_slice(mask, b, h, lq, lk) != 0)
            if block_mask is not None:
                keep = keep & _block_keep(block_mask, case, b, h, lq, lk)
            s = np.where(keep, s, -np.inf).astype(f32)
            m = s.max(axis=1, keepdims=True) if lk > 0 else np.full((lq, 1), -np.inf, f32)
            if sinks is not None:  # the sink's logit joins the max and the denominator (no value vector)
                m = np.maximum(m, f32(sinks[h]))
            empty = ~np.isfinite(m[:, 0])
            m = np.where(np.isfinite(m), m, 0).astype(f32)
            e = np.exp(s - m)  # exp(-inf) = 0 on masked scores
            keys = e.sum(axis=1, keepdims=True)
            e_sink = np.exp(f32(sinks[h]) - m) if sinks is not None else np.zeros_like(m)
            l = keys + e_sink
            l_p = keys if bug == "sink_missing_from_output" else l
            p = np.where(l_p > 0, e / np.where(l_p > 0, l_p, 1), 0).astype(f32)
            if keep_mask is not None:  # dropout after the softmax: p' = p keep / (1 - p_drop)
                z = np.where(_slice(keep_mask, b, h, lq, lk) != 0, z_scale, f32(0)).astype(f32)
            else:
                z = np.ones((lq, lk), f32)
            p_kept = (p * z).astype(f32)
            O = p_kept @ V
            o[q0:q1, h] = O
            l_lse = keys if bug == "sink_missing_from_lse" else l
            with np.errstate(divide="ignore"):  # log(0) = -inf: a row with no key and no sink
                lse[h, q0:q1] = np.where(empty, -np.inf, m[:, 0] + np.log(l_lse[:, 0]))
            if cache:  # a KV-cache case is forward only
                continue
            # backward: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO o O))
            dv[k0:k1, hkv] += p_kept.T @ dO if dv_product is None else dv_product(p_kept, dO)
            dp = dO @ V.T  # dP' of p'; dP = dP' z
            if bug != "dropout_missing_in_backward":
                dp = dp * z
            D = (dO * O).sum(axis=1, keepdims=True)
            ds = p * (dp - D)
            if dsinks is not None:  # dsink = sum_i P_sink,i (0 - D_i): the sink's dP is 0
                p_sink = (e_sink / np.where(l > 0, l, 1))[:, 0]
                dsinks[h] += (1 if bug == "dsinks_sign" else -1) * (p_sink * D[:, 0]).sum()
            if dbias is not None:
                db = _slice(dbias, b, h, lq, lk)
                db += ds  # summed over the broadcast dims
            if cap > 0:
                ds = ds * (1 - np.tanh(raw / cap) ** 2)  # d/dx c tanh(x/c) = 1 - tanh^2(x/c)
            dq[q0:q1, h] = scale * (ds @ K)
            dk[k0:k1, hkv] += scale * (ds.T @ Q)
    if cache:
        B, Sq = q.shape[0], q.shape[1]
        lse = lse.reshape(hq, B, Sq).transpose(1, 0, 2)
        return {"o": o.reshape(B, Sq, hq, -1), "lse": np.ascontiguousarray(lse)}
    if not varlen:
        B, Sq, Sk = q.shape[0], q.shape[1], k.shape[1]
        o, dq = o.reshape(B, Sq, hq, -1), dq.reshape(B, Sq, hq, -1)
        dk, dv = dk.reshape(B, Sk, hk, -1), dv.reshape(B, Sk, hk, -1)
        lse = lse.reshape(hq, B, Sq).transpose(1, 0, 2)
    out = {"o": o, "lse": np.ascontiguousarray(lse), "dq": dq, "dk": dk, "dv": dv}
    if mla:  # V is K's first head_dim_v columns: K's gradient is dK + [dV, 0]
        dk[..., : dv.shape[-1]] += dv
        del out["dv"]
    if dbias is not None:
        out["dbias"] = dbias
    if dsinks is not None:
        out["dsinks"] = dsinks
    return out
