"""Liger-Kernel's Triton RMSNorm (alone and fused with the residual add) and LayerNorm, forward and backward, on
the norm cases (LayerNorm with a residual: h = x + residual added in the dtype first). casting_mode "llama" (the
default: x / rms rounded to the dtype before the weight) and "gemma" (everything in fp32, one rounding at the end):
    pytest bench/gpu/peers/test_liger_norms.py --flashsim-suite norm --flashsim-time 5"""
import pytest
import torch
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
from liger_kernel.ops.layer_norm import LigerLayerNormFunction
from liger_kernel.ops.rms_norm import LigerRMSNormFunction


# No fp64: its RMSNorm raises KeyError on torch.float64, its LayerNorm takes fp64 but computes at fp32 precision
# (calibration peers.h100_goldens).
@pytest.mark.flashsim(kernel="liger", ops=["rmsnorm", "layernorm"], unsupported=["fp64"])
@pytest.mark.parametrize("casting", ["llama", "gemma"])
def test_liger(flashsim_case, casting):
    like = torch.empty(0, device="cuda")
    c, names = flashsim_case.case_json, flashsim_case.input_names
    ins = {n: t.requires_grad_(n != "dy") for n, t in flashsim_case.inputs(like=like).items()}
    ln, res = flashsim_case.op == "layernorm", "residual" in names
    if ln and casting != "llama":
        pytest.skip("Liger's LayerNorm has no casting mode")
    leaves = [ins[n] for n in ("x", "residual", "weight", "bias") if n in names]

    def call():  # Liger writes dx into dy's memory by default: in_place=False keeps dy for the next call
        if ln:  # no fused residual: h = x + residual in the dtype first
            h = ins["x"] + ins["residual"] if res else None
            y = LigerLayerNormFunction.apply(ins["x"] if h is None else h, ins["weight"], ins["bias"], c["eps"])
        elif res:
            y, h = LigerFusedAddRMSNormFunction.apply(ins["x"], ins["residual"], ins["weight"], c["eps"], 0.0, casting)
        else:
            y, h = LigerRMSNormFunction.apply(ins["x"], ins["weight"], c["eps"], 0.0, casting, False), None
        return (y, h, *torch.autograd.grad(y, leaves, ins["dy"]))

    y, h, *grads = flashsim_case.timed(call)
    out = dict(y=y, **dict(zip(["dx", "dresidual", "dweight", "dbias"] if res else ["dx", "dweight", "dbias"], grads)))
    if res:
        out["h"] = h
    flashsim_case.verify(**out)
