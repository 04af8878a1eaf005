"""PyTorch's torch.nn.functional.rms_norm and layer_norm (CUDA), forward and backward, on the norm cases; with a
residual, h = x + residual is added in the dtype first (PyTorch has no fused add + norm):
    pytest bench/gpu/peers/test_torch_norms.py --flashsim-suite norm --flashsim-time 5"""
import pytest
import torch
import torch.nn.functional as F


@pytest.mark.flashsim(kernel="torch", ops=["rmsnorm", "layernorm"])
def test_norm(flashsim_case):
    like = torch.empty(0, device="cuda")
    c, names = flashsim_case.case_json, flashsim_case.input_names
    ins = {n: t.requires_grad_(n != "dy") for n, t in flashsim_case.inputs(like=like).items()}
    ln = flashsim_case.op == "layernorm"
    leaves = [ins[n] for n in ("x", "residual", "weight", "bias") if n in names and n != "dy"]

    def call():
        h = ins["x"] + ins["residual"] if "residual" in names else ins["x"]
        shape = (h.shape[-1],)
        y = F.layer_norm(h, shape, ins["weight"], ins["bias"], c["eps"]) if ln else \
            F.rms_norm(h, shape, ins["weight"], c["eps"])
        return (y, h, *torch.autograd.grad(y, leaves, ins["dy"]))

    y, h, *grads = flashsim_case.timed(call)
    out = dict(y=y, **dict(zip(["dx", "dresidual", "dweight", "dbias"] if "residual" in names else
                                ["dx", "dweight", "dbias"], grads)))
    if "residual" in names:
        out["h"] = h
    flashsim_case.verify(**out)  # rstd and mean are not returned
