"""flashsim: exact attention on the CPU, golden tests for attention kernels, a GPU memory-hierarchy simulator.

    import flashsim
    o, lse = flashsim.attention(q, k, v, causal=True)                    # exact (fp64) reference
    dq, dk, dv, dbias = flashsim.attention_backward(q, k, v, o, do, lse, causal=True)
    suite = flashsim.golden.Suite("smoke")                               # golden cases, verify()
    flashsim.sim.predict(flashsim.Problem(seqlen=4096, head_dim=128, dtype="bf16"), {"block_q": 128})

The pytest plugin (flashsim.pytest_plugin) parametrizes a `flashsim_case` fixture over a golden suite.
"""
from . import golden, sim
from ._native import version as __version__
from ._problem import Problem
from ._reference import attention, attention_backward

__all__ = ["attention", "attention_backward", "golden", "sim", "Problem", "__version__"]
