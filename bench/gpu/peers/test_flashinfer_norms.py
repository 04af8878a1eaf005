"""FlashInfer's RMSNorm, fused add + RMSNorm and LayerNorm (CUDA kernels, JIT-compiled on first use; forward only:
FlashInfer has no norm backward) on the norm cases:
    pytest bench/gpu/peers/test_flashinfer_norms.py --flashsim-suite norm --flashsim-time 5"""
import os

import pytest
import torch

os.environ.setdefault("FLASHINFER_USE_CUDA_NORM", "1")  # its CUDA kernels: its CuTe-DSL ones need nvidia-cutlass-dsl
flashinfer = pytest.importorskip("flashinfer")


# fp64 / fp32: its norm kernels take fp16 / bf16 (LayerNorm bf16 alone); forward only: no backward in FlashInfer.
@pytest.mark.flashsim(kernel="flashinfer-norm", ops=["rmsnorm", "layernorm"], unsupported=["fp64", "fp32"])
def test_flashinfer_norm(flashsim_case):
    c, names, ln = flashsim_case.case_json, flashsim_case.input_names, flashsim_case.op == "layernorm"
    like = torch.empty(0, device="cuda")
    x = flashsim_case.inputs("x", like=like)
    hidden = x.shape[-1]
    if ln and x.dtype != torch.bfloat16:
        pytest.skip(f"{flashsim_case.name}: FlashInfer's LayerNorm takes bf16 alone")
    res = flashsim_case.inputs("residual", like=like) if "residual" in names else None
    weight = flashsim_case.inputs("weight", like=like)

    def call():  # fused_add_rmsnorm works in place: residual += x, x = rmsnorm(residual); fresh copies each call
        if ln:  # no fused residual: h = x + residual in the dtype first; its gamma and beta in fp32
            h = x + res if res is not None else x
            y = flashinfer.layernorm(h.reshape(-1, hidden), weight.float(),
                                     flashsim_case.inputs("bias", like=like).float(), c["eps"])
            return y.view(x.shape), h
        if res is None:
            return flashinfer.rmsnorm(x.reshape(-1, hidden), weight, c["eps"]).view(x.shape), None
        y, h = x.clone().reshape(-1, hidden), res.clone().reshape(-1, hidden)
        flashinfer.fused_add_rmsnorm(y, h, weight, c["eps"])
        return y.view(x.shape), h.view(x.shape)

    y, h = flashsim_case.timed(call)
    flashsim_case.verify(y=y, **({"h": h} if res is not None else {}))
