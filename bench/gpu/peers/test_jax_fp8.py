"""cuDNN's FP8 attention through JAX (jax._src.cudnn.fused_attention_stablehlo, use_fp8=True), forward, on the
fp8 suite. It returns o in e4m3 at its scale factor: Case.verify(output_scale=) checks it on that grid.
    pytest bench/gpu/peers/test_jax_fp8.py --flashsim-suite fp8 --flashsim-time 5"""
import math

import jax
import jax.numpy as jnp
import pytest
from jax._src.cudnn import fused_attention_stablehlo as cudnn

FORMATS = {"e4m3": jnp.float8_e4m3fn, "e5m2": jnp.float8_e5m2}
P_SCALE = 256.0  # P quantized at 2^8 scale: FlashAttention-3's pipeline, which the goldens emulate
E4M3_MAX = 448.0  # o's format's largest finite number


# Per-tensor descales only; no softcap, masks, sinks or packed sequences; its causal mask is top-left.
@pytest.mark.flashsim(kernel="jax-fp8", unsupported=["window", "softcap", "alibi", "bias", "mask", "block_mask",
                                                     "sinks", "dropout", "varlen", "kv_cache", "mla"])
def test_jax_fp8(flashsim_case):
    features = flashsim_case.features
    if "fp8" not in features or flashsim_case.case_json.get("descale") == "per-head":
        pytest.skip("cuDNN's FP8 attention takes FP8 inputs with one descale factor a tensor")
    if {"causal", "seqlen_q_ne_k"} <= features:
        pytest.skip("its causal mask is top-left; the case's, seqlen_q != seqlen_k, bottom-right")
    fmt = FORMATS[flashsim_case.dtype]
    q, k, v = (jax.lax.bitcast_convert_type(jnp.asarray(x), fmt) for x in flashsim_case.inputs("q", "k", "v"))
    one = jnp.ones((1, 1, 1, 1), jnp.float32)
    scales = {n: one for n in cudnn.fp8_params_keys}
    if "descale" in features:
        for n in ("q", "k", "v"):
            scales[f"descale_{n}"] = jnp.asarray(flashsim_case.inputs(f"{n}_descale"), jnp.float32).reshape(1, 1, 1, 1)
    # |o| <= amax(V) (o's rows are convex combinations of V's): o's scale, the largest power of two under 448 / amax
    amax = float(jnp.max(jnp.abs(v.astype(jnp.float32))) * scales["descale_v"][0, 0, 0, 0])
    o_scale = 2.0 ** math.floor(math.log2(E4M3_MAX / (amax or 1.0)))
    scales.update(scale_s=one * P_SCALE, descale_s=one / P_SCALE, scale_o=one * o_scale)
    mask = cudnn.MaskType.CAUSAL if "causal" in features else cudnn.MaskType.NO_MASK
    call = jax.jit(lambda q, k, v: cudnn.dot_product_attention(
        q, k, v, fp8_params=scales, scale=flashsim_case.case_json["scale"], use_fp8=True, mask_type=mask)[0])
    try:
        o = flashsim_case.timed(lambda: call(q, k, v))
    except (ValueError, NotImplementedError, RuntimeError) as e:  # its own refusal (cuDNN's limits)
        pytest.skip(f"jax-fp8 refuses {flashsim_case.describe_features()}: {str(e).splitlines()[0]}")
    flashsim_case.verify(o=o, output_scale={"o": o_scale})  # no lse returned
