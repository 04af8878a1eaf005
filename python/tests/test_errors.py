"""Bad input is a ValueError naming the field, with the command line's message; nothing crashes."""
import numpy as np
import pytest

import flashsim

from conftest import run_cli


def qkv(b=1, s=16, h=2, hkv=2, d=8, dtype=np.float32):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((b, s, h, d)).astype(dtype), rng.standard_normal((b, s, hkv, d)).astype(dtype),
            rng.standard_normal((b, s, hkv, d)).astype(dtype))


@pytest.mark.parametrize("call, message", [
    (lambda q, k, v: flashsim.attention(q[0], k, v), "q: shape [16, 2, 8]: expected [batch, seqlen, heads, head_dim]"),
    (lambda q, k, v: flashsim.attention(q, k[..., :4], v), "k: head_dim 4 differs from q's 8"),
    (lambda q, k, v: flashsim.attention(q, k.astype(np.float16), v), "k: dtype fp16 differs from q's fp32"),
    (lambda q, k, v: flashsim.attention(q.astype(np.int32), k, v), "q: elements of type int32"),
    (lambda q, k, v: flashsim.attention(q, k, v, precision="fp8"), "precision"),
    (lambda q, k, v: flashsim.attention(q, k, v, algorithm="fa3"), "algorithm"),
    (lambda q, k, v: flashsim.attention(q, k, v, window=(3,)), "window: expected (left, right)"),
    (lambda q, k, v: flashsim.attention(q, k, v, causal=True, window=(4, 2)), "window: causal"),
    (lambda q, k, v: flashsim.attention(q, k, v, bias=np.zeros((1, 3, 16, 16), np.float32)), "bias: shape [1, 3, 16, 16]"),
    (lambda q, k, v: flashsim.attention(q, k, v, mask=np.ones((1, 2, 16, 16), np.float32)), "mask: elements of type float32"),
    (lambda q, k, v: flashsim.attention(q, k, v, alibi_slopes=np.ones(3, np.float32)), "alibi_slopes: shape [3]"),
    (lambda q, k, v: flashsim.attention(q[0], k[0], v[0], cu_seqlens_q=np.array([0, 16], np.int32)), "cu_seqlens_k"),
    (lambda q, k, v: flashsim.attention(q[0], k[0], v[0], cu_seqlens_q=np.array([0, 9], np.int32),
                                        cu_seqlens_k=np.array([0, 16], np.int32)), "cu_seqlens_q: ends at 9"),
    (lambda q, k, v: flashsim.attention(q, k, v, block_q=0), "block_q"),
    (lambda q, k, v: flashsim.attention_backward(q, k, v, q, q, np.zeros((1, 2, 16), np.float32),
                                                 algorithm="two-pass"), "algorithm"),
    (lambda q, k, v: flashsim.attention_backward(q, k, v, q, q, np.zeros((1, 2, 15), np.float32)), "lse: shape"),
])
def test_bad_input_is_a_value_error_naming_the_field(call, message):
    with pytest.raises(ValueError) as e:
        call(*qkv())
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_messages_are_the_command_lines():
    """The same invalid problem through the CLI and the module: the CLI's one line is 'flashsim: error: ' and
    the exception's text."""
    q, k, v = qkv(h=6, hkv=4)
    with pytest.raises(ValueError) as e:
        flashsim.attention(q, k, v)
    cli = run_cli("ref", "--heads", "6", "--heads-kv", "4", "--seqlen", "16", "--head-dim", "8", check=False)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"flashsim: error: {e.value}"


def test_a_memory_limit_is_a_memory_error():
    q, k, v = qkv(s=256)
    with pytest.raises(MemoryError):
        flashsim.attention(q, k, v, algorithm="naive", max_memory_bytes=1000)


def test_gpu_tensors_are_refused_with_the_fix():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    q = torch.zeros(1, 4, 1, 8, device="cuda")
    with pytest.raises(ValueError, match=r"q: a tensor on cuda:0; flashsim computes on the CPU: pass q.cpu\(\)"):
        flashsim.attention(q, q, q)


def test_bad_suites_and_problems():
    with pytest.raises(ValueError, match="neither a suite folder"):
        flashsim.golden.Suite("no-such-suite")
    with pytest.raises(ValueError, match="heads_kv"):
        flashsim.Problem(heads_q=6, heads_kv=4)
    with pytest.raises(ValueError, match="tile: unknown field 'block_x'"):
        flashsim.sim.predict(flashsim.Problem(), {"block_x": 3})
