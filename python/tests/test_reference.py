"""flashsim.attention / attention_backward against the command line's own goldens (identical bytes), other
array types and precisions."""
import numpy as np
import pytest

import flashsim

from conftest import run_cli


def call_kwargs(case):
    """flashsim.attention's keyword arguments for a golden case (its semantics and optional inputs)."""
    c = case.case_json
    kw = dict(causal=c["window_right"] == 0, window=(c["window_left"], c["window_right"]), softcap=c["softcap"],
              scale=c["scale"])
    names = case.input_names
    for name in ("bias", "mask", "alibi_slopes", "cu_seqlens_q", "cu_seqlens_k"):
        if name in names:
            kw[name] = case.inputs(name)
    return kw


def dense_cases(suite):
    return [c for c in suite if "kv_cache" not in c.features and "block_mask" not in c.features]


def test_forward_and_backward_equal_the_goldens_bit_for_bit(smoke):
    """The goldens were written by `flashsim golden generate` (the CLI): exact fa2 forward and backward. The
    module on the stored inputs gives the same float64 bytes."""
    cases = dense_cases(smoke)
    assert len(cases) >= 15
    for case in cases:
        q, k, v, do = case.inputs("q", "k", "v", "do")
        kw = call_kwargs(case)
        o, lse = flashsim.attention(q, k, v, **kw)
        assert o.dtype == np.float64 and lse.dtype == np.float64
        assert o.tobytes() == case.expected("o").tobytes(), case.name
        assert lse.tobytes() == case.expected("lse").tobytes(), case.name
        dq, dk, dv, dbias = flashsim.attention_backward(q, k, v, o, do, lse, **kw)
        for name, got in (("dq", dq), ("dk", dk), ("dv", dv), ("dbias", dbias)):
            if name in case.output_names:
                assert got.tobytes() == case.expected(name).tobytes(), (case.name, name)
            else:
                assert got is None


def test_the_cli_and_the_module_write_identical_suites(tmp_path):
    run_cli("golden", "generate", "--suite", "smoke", "--out", str(tmp_path / "cli"))
    flashsim.golden.generate("smoke", tmp_path / "py", progress=False)
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert cli_files == sorted(p.name for p in (tmp_path / "py").iterdir())
    assert len(cli_files) == 19  # 18 cases and the manifest
    for name in cli_files:
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "py" / name).read_bytes(), name


def test_every_algorithm_and_precision(smoke):
    case = smoke["bf16-gqa"]
    q, k, v = case.inputs("q", "k", "v")
    kw = call_kwargs(case)
    exact, lse = flashsim.attention(q, k, v, **kw)
    for algo in ("naive", "three-pass", "two-pass", "fa1", "fa2"):
        o, _ = flashsim.attention(q, k, v, algorithm=algo, block_q=32, block_k=16, **kw)
        np.testing.assert_allclose(o, exact, rtol=0, atol=1e-12)
    o32, lse32 = flashsim.attention(q, k, v, precision="fp32", **kw)
    assert o32.dtype == np.float32 and lse32.dtype == np.float32
    assert 0 < np.abs(o32 - exact).max() < 1e-5
    emu, lse_emu = flashsim.attention(q, k, v, precision="emulated", **kw)
    assert emu.dtype == flashsim._arrays.BF16 and lse_emu.dtype == np.float32
    # The emulated pipeline is what the tolerances derive from: it passes its own case.
    assert case.verify(o=emu, lse=lse_emu).passed


def test_bf16_round_trips_through_ml_dtypes(smoke):
    case = smoke["bf16-gqa"]
    q = case.inputs("q")
    assert q.dtype == flashsim._arrays.BF16
    raw = case.native.tensor("q")
    assert raw.dtype == np.uint16 and q.view(np.uint16).tobytes() == raw.tobytes()
    # Widened to float32 (exact), the same problem in fp32: the same exact output.
    k, v = case.inputs("k", "v")
    o_bf16, _ = flashsim.attention(q, k, v)
    o_f32, _ = flashsim.attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32))
    assert o_bf16.tobytes() == o_f32.tobytes()


def test_float16_and_float64_inputs():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 40, 2, 16)) for _ in range(3))
    o64, _ = flashsim.attention(q, k, v, causal=True)
    o16, _ = flashsim.attention(*(x.astype(np.float16) for x in (q, k, v)), causal=True, precision="emulated")
    assert o16.dtype == np.float16
    assert np.abs(o16.astype(np.float64) - o64).max() < 5e-3


class DlpackOnly:
    """Exposes an array through DLPack only (no buffer protocol, no NumPy type)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_and_non_contiguous_inputs(smoke):
    case = smoke["fp32-basic"]
    q, k, v = case.inputs("q", "k", "v")
    o, lse = flashsim.attention(DlpackOnly(q), DlpackOnly(k), DlpackOnly(v))
    assert o.tobytes() == case.expected("o").tobytes()
    # A transposed view (BHSD storage seen as BSHD) is made contiguous, not misread.
    qt = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    assert not qt.flags.c_contiguous
    o2, _ = flashsim.attention(qt, k, v)
    assert o2.tobytes() == o.tobytes()


def test_torch_cpu_tensors_in_and_out(smoke):
    torch = pytest.importorskip("torch")
    case = smoke["bf16-gqa"]
    q, k, v, do = case.inputs("q", "k", "v", "do", like=torch.empty(0))
    assert q.dtype == torch.bfloat16
    kw = call_kwargs(case)
    o, lse = flashsim.attention(q, k, v, **kw)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float64
    assert o.numpy().tobytes() == case.expected("o").tobytes()
    emu, _ = flashsim.attention(q, k, v, precision="emulated", **kw)
    assert emu.dtype == torch.bfloat16
    assert case.verify(o=emu).passed
    dq, dk, dv, _ = flashsim.attention_backward(q, k, v, o, do, lse, **kw)
    assert dq.numpy().tobytes() == case.expected("dq").tobytes()
    assert dv.numpy().tobytes() == case.expected("dv").tobytes()


def test_jax_arrays_through_dlpack(smoke):
    jax = pytest.importorskip("jax")
    case = smoke["bf16-gqa"]
    cpu = jax.devices("cpu")[0]
    q, k, v = (jax.device_put(x, cpu) for x in case.inputs("q", "k", "v", like=jax.numpy.zeros(0)))
    assert q.dtype == jax.numpy.bfloat16
    o, _ = flashsim.attention(q, k, v, **call_kwargs(case))
    assert o.tobytes() == case.expected("o").tobytes()


def test_variable_lengths_with_packed_rows(smoke):
    case = smoke["bf16-varlen-causal"]
    q, k, v = case.inputs("q", "k", "v")
    assert q.ndim == 3
    o, lse = flashsim.attention(q, k, v, **call_kwargs(case))
    assert lse.shape == case.expected("lse").shape
    assert o.tobytes() == case.expected("o").tobytes()
