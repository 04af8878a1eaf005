"""JAX's jax.nn.dot_product_attention, cuDNN and XLA implementations (jit-compiled), forward and backward:
    pytest bench/gpu/peers/test_jax_attention.py --flashsim-suite default --flashsim-time 5"""
import contextlib

import jax
import jax.numpy as jnp
import pytest

# xla-highest: XLA with fp32 matrix products at full precision (jax.default_matmul_precision("highest")); the
# default lets XLA use TF32 for fp32 inputs.
IMPLEMENTATIONS = ["cudnn", "xla", "xla-highest"]


# Its arguments have no softcap, ALiBi, packed variable lengths, KV cache or FP8 descales (Case.kwargs("jax");
# block masks: a mask).
@pytest.mark.flashsim(kernel="jax", unsupported=["softcap", "alibi", "sinks", "dropout", "mla", "varlen",
                                                 "kv_cache", "fp8"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_jax(flashsim_case, implementation):
    like = jnp.zeros(0)
    q, k, v, do = flashsim_case.inputs("q", "k", "v", "do", like=like)  # BSHD is JAX's BTNH
    kwargs = flashsim_case.kwargs("jax", like=like)
    backward = "dq" in flashsim_case.output_names

    @jax.jit
    def call(q, k, v, do):
        def attention(q, k, v):
            impl = implementation.removesuffix("-highest")
            with jax.default_matmul_precision("highest") if impl != implementation else contextlib.nullcontext():
                return jax.nn.dot_product_attention(q, k, v, implementation=impl, **kwargs)

        if not backward:
            return (attention(q, k, v),)
        o, vjp = jax.vjp(attention, q, k, v)
        return (o, *vjp(do))

    try:
        out = flashsim_case.timed(lambda: call(q, k, v, do))
    except (ValueError, NotImplementedError, RuntimeError) as e:  # its own refusal (cuDNN's limits)
        pytest.skip(f"jax-{implementation} refuses {flashsim_case.describe_features()}: {str(e).splitlines()[0]}")
    flashsim_case.verify(**dict(zip(("o", "dq", "dk", "dv"), out)))  # no lse returned
