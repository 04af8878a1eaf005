"""What the peer adapters (bench/gpu/peers) rest on: Case.timed, Report.worst_fraction, describe_features, the
plugin's --flashsim-record / --flashsim-time / --flashsim-time-lock, and the 'jax' and 'flex' styles of Case.kwargs."""
import json
import sys
import textwrap

import numpy as np
import pytest

import flashsim
from conftest import EXAMPLES, SMOKE

sys.path.insert(0, str(EXAMPLES))
from numpy_attention import attention  # noqa: E402


def numpy_outputs(case):
    t = {n: np.asarray(x, dtype=np.float32) if x.dtype.name == "bfloat16" else x for n, x in case.inputs().items()}
    return attention(t, case.case_json)


def test_timed_calls_wait_for_the_time_lock(smoke, tmp_path):
    import fcntl
    import threading
    import time

    case = smoke["fp16-causal-odd"]
    lock = tmp_path / "time.lock"
    case.time_lock, calls = str(lock), []
    holder = open(lock, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process's timed calls, as a second open file description
    worker = threading.Thread(target=lambda: case.timed(lambda: calls.append(time.monotonic()), repeats=3))
    worker.start()
    time.sleep(0.3)
    assert len(calls) == 1  # the first (checked) call ran; the timed ones wait for the lock
    released = time.monotonic()
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    worker.join(timeout=10)
    assert len(calls) == 4 and min(calls[1:]) >= released and case.seconds is not None
    case.time_lock = None


def test_worst_fraction_is_the_largest_error_over_its_bound(smoke):
    case = smoke["fp16-causal-odd"]
    out = numpy_outputs(case)
    report = case.verify(**out)
    fractions = [max(o.max_abs / o.bound_abs, o.rel_l2 / o.bound_rel) for o in report.outputs.values()]
    assert report.worst_fraction == pytest.approx(max(fractions)) and 0 < report.worst_fraction <= 1
    assert case.last_report is report
    out["o"] = out["o"] * np.float32(1.02)  # 2% off: over the bound
    bad = case.verify(**out, raise_on_failure=False)
    assert not bad.passed and bad.worst_fraction > 1 and case.last_report is bad


def test_timed_returns_the_first_result_and_keeps_the_median(smoke):
    case = smoke["fp32-basic"]
    calls = []
    result = case.timed(lambda: calls.append(len(calls)) or len(calls), repeats=4)
    assert result == 1 and len(calls) == 5  # checked once, timed four more
    assert case.seconds is not None and 0 <= case.seconds < 1
    case.seconds = None
    assert case.timed(lambda: 7) == 7 and case.seconds is None  # time_repeats 0: called once, not timed


def test_describe_features_puts_the_dtype_first(smoke):
    words = smoke["bf16-gqa"].describe_features().split()
    assert words[0] == "bf16" and "gqa" in words and "backward" not in words


def test_jax_style_gives_a_mask_where_is_causal_would_be_wrong(smoke):
    causal = smoke["fp16-causal-odd"]
    assert causal.kwargs("jax") == {"scale": pytest.approx(causal.case_json["scale"]), "is_causal": True}
    shorter = smoke["bf16-causal-q-longer-than-k"]
    kw = shorter.kwargs("jax")
    assert "is_causal" not in kw and "enable_gqa" not in kw and kw["mask"].dtype == bool
    assert np.array_equal(kw["mask"], shorter.kwargs("sdpa")["attn_mask"])
    with pytest.raises(ValueError, match="JAX has no argument for softcap"):
        smoke["bf16-softcap"].kwargs("jax")
    with pytest.raises(ValueError, match="expected 'flash_attn', 'sdpa', 'jax' or 'flex'"):
        shorter.kwargs("triton")


RECORDED = '''
import sys
import numpy as np
import pytest
sys.path.insert(0, {examples!r})
from numpy_attention import attention

@pytest.mark.flashsim(unsupported=["varlen"])
@pytest.mark.parametrize("variant", ["good", "bad"])
def test_numpy(flashsim_case, variant):
    t = {{n: np.asarray(x, dtype=np.float32) if x.dtype.name == "bfloat16" else x
         for n, x in flashsim_case.inputs().items()}}
    out = flashsim_case.timed(lambda: attention(t, flashsim_case.case_json))
    if variant == "bad":
        out["o"][..., 0] += 1
    flashsim_case.verify(**out)
'''


def test_plugin_records_a_line_a_case(pytester, tmp_path):
    pytester.makepyfile(RECORDED.format(examples=str(EXAMPLES)))
    record = tmp_path / "peers.jsonl"
    pytester.runpytest("-p", "no:cacheprovider", "--flashsim-suite", str(SMOKE), "--flashsim-filter",
                       "fp32-basic|varlen", "--flashsim-time", "2", "--flashsim-time-lock", str(tmp_path / "t.lock"),
                       "--flashsim-record", str(record), "-q")
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    by = {(r["kernel"], r["case"]): r for r in rows}
    varlen = [c for c in flashsim.golden.Suite(SMOKE).names if "varlen" in c]
    assert len(rows) == 2 * (1 + len(varlen)) and varlen
    good, bad = by[("numpy-good", "fp32-basic")], by[("numpy-bad", "fp32-basic")]
    assert good["outcome"] == "pass" and 0 < good["worst_fraction"] <= 1 and good["seconds"] > 0
    assert (tmp_path / "t.lock").is_file()  # the timed calls took the lock
    assert good["suite"] == "smoke" and "o" in good["outputs"] and "fp32" in good["features"]
    assert bad["outcome"] == "fail" and bad["worst_fraction"] > 1 and bad["reason"].startswith("o: ")
    skipped = by[("numpy-good", varlen[0])]
    assert skipped["outcome"] == "skip" and "does not support varlen" in skipped["reason"]
    assert skipped["worst_fraction"] is None


def test_flex_masks_are_the_visible_keys(smoke):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.attention.flex_attention")
    like = torch.empty(0)
    for name in ("bf16-causal-q-longer-than-k", "fp16-causal-odd"):
        case = smoke[name]
        kw = case.kwargs("flex", like=like)
        mask_mod = kw["block_mask"].mask_mod
        c = case.case_json
        i = torch.arange(c["seqlen_q"])[:, None]
        j = torch.arange(c["seqlen_k"])[None, :]
        zero = torch.zeros((), dtype=torch.long)
        visible = mask_mod(zero, zero, i, j)
        assert torch.equal(visible, torch.from_numpy(case.kwargs("sdpa")["attn_mask"][0, 0])
                           if "attn_mask" in case.kwargs("sdpa") else torch.ones_like(visible).tril()), name


SPARSE = {"name": "tiny-sparse", "defaults": {"batch": 2, "heads_q": 2, "heads_kv": 1, "seqlen": 70, "head_dim": 16,
                                              "dtype": "bf16", "block_q": 16, "block_k": 32},
          "cases": [{"name": "random-bhqk", "block_mask": "bhqk", "block_mask_spec": "random:keep=0.5"},
                    {"name": "causal-11qk", "block_mask": "11qk", "causal": True,
                     "block_mask_spec": "random:keep=0.5"}]}


def test_sdpa_and_jax_masks_expand_the_block_mask(tmp_path):
    spec = tmp_path / "tiny-sparse.json"
    spec.write_text(json.dumps(SPARSE))
    suite = flashsim.golden.Suite(flashsim.golden.generate(str(spec), tmp_path / "suite", progress=False))
    for case in suite:
        tiles = case.inputs("block_mask").astype(bool)
        mask = case.kwargs("sdpa")["attn_mask"]
        assert np.array_equal(mask, case.kwargs("jax")["mask"])
        causal = case.case_json.get("window_right", -1) == 0
        for b, h, i, j in [(0, 0, 0, 0), (1, 1, 69, 40), (0, 1, 17, 33), (1, 0, 50, 69), (1, 1, 33, 2)]:
            keep = tiles[min(b, tiles.shape[0] - 1), min(h, tiles.shape[1] - 1), i // 16, j // 32]
            assert mask[min(b, mask.shape[0] - 1), min(h, mask.shape[1] - 1), i, j] == (keep and (j <= i or not causal))


def test_plugin_shards_a_suite(pytester):
    pytester.makepyfile("def test_ids(flashsim_case):\n    assert flashsim_case.name\n")
    names = flashsim.golden.Suite(SMOKE).names
    result = pytester.runpytest("-p", "no:cacheprovider", "--flashsim-suite", str(SMOKE), "--flashsim-shard", "1/3",
                                "--collect-only", "-q")
    collected = [line.split("[", 1)[1].rstrip("]") for line in result.stdout.lines if "test_ids[" in line]
    assert collected == names[1::3]
    bad = pytester.runpytest("--flashsim-suite", str(SMOKE), "--flashsim-shard", "3/3")
    assert bad.ret != 0 and "expected I/N" in bad.stderr.str() + bad.stdout.str()


def test_plugin_shards_a_suite_by_variant(pytester):
    # Every case in exactly one of 4 shards; cases of one (dtype, head dims, features) variant in the same shard;
    # no shard holds more than the largest variant's group above the mean (the largest-first deal).
    from flashsim.pytest_plugin import _variant

    pytester.makepyfile("def test_ids(flashsim_case):\n    assert flashsim_case.name\n")
    suite = flashsim.golden.Suite(SMOKE)
    shards = []
    for i in range(4):
        result = pytester.runpytest("-p", "no:cacheprovider", "--flashsim-suite", str(SMOKE), "--flashsim-shard",
                                    f"{i}/4", "--flashsim-shard-by", "variant", "--collect-only", "-q")
        shards.append([line.split("[", 1)[1].rstrip("]") for line in result.stdout.lines if "test_ids[" in line])
    assert sorted(sum(shards, [])) == sorted(suite.names)
    home = {n: i for i, names in enumerate(shards) for n in names}
    variants = {}
    for case in suite:
        variants.setdefault(_variant(case), set()).add(home[case.name])
    assert all(len(where) == 1 for where in variants.values()) and len(variants) > 4
    biggest = max(sum(1 for c in suite if _variant(c) == v) for v in variants)
    assert max(map(len, shards)) <= len(suite) / 4 + biggest
    assert _variant(suite["bf16-softcap"]) != _variant(suite["bf16-gqa"])  # softcap is a variant of its own


PAGED = {"name": "tiny-paged", "defaults": {"batch": 3, "heads_q": 4, "heads_kv": 2, "head_dim": 16, "dtype": "bf16",
                                            "seqlen_q": 2, "page_size": 7, "causal": True},
         "cases": [{"name": "append", "cache_seqlens": [0, 9, 20], "seqlen_new": 2, "softcap": 10.0},
                   {"name": "window-alibi", "cache_seqlens": [5, 30, 0], "window_left": 6, "alibi": True}]}


def test_flex_paged_passes_the_decode_goldens(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.attention.experimental._paged_attention")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    spec = tmp_path / "tiny-paged.json"
    spec.write_text(json.dumps(PAGED))
    suite = flashsim.golden.Suite(flashsim.golden.generate(str(spec), tmp_path / "suite", progress=False))
    like = torch.empty(0, device="cuda" if torch.cuda.is_available() else "cpu")
    for case in suite:
        q = case.inputs("q", like=like).transpose(1, 2).float()
        k, v, kw = case.flex_paged(like)
        o, lse = flex_attention(q, k.float(), v.float(), return_lse=True, **kw)
        assert case.verify(o=o.transpose(1, 2), lse=lse, compute="fp32").passed, case.name
        # the page maps left out: every row of the physical cache seen, other sequences' and spare pages included
        everything = create_block_mask(lambda b, h, i, j: j >= 0, q.shape[0], None, q.shape[2], k.shape[2],
                                       device=like.device)
        o, lse = flex_attention(q, k.float(), v.float(), return_lse=True, scale=kw["scale"],
                                enable_gqa=kw["enable_gqa"], block_mask=everything)
        assert not case.verify(o=o.transpose(1, 2), lse=lse, compute="fp32", raise_on_failure=False).passed
    with pytest.raises(ValueError, match="KV-cache"):
        flashsim.golden.Suite(SMOKE)["fp16-causal-odd"].flex_paged(like)


def test_paged_cache_gives_each_sequences_keys_after_the_append(tmp_path):
    """Case.paged_cache (FlashInfer's page lists): walking a sequence's pages gives the keys the NumPy example
    gathers (k_new appended), bit for bit; pages no sequence uses stay as stored."""
    from numpy_attention import _gather_cache

    spare_pages = {"name": "spare", "cache_seqlens": [3, 15, 8], "num_blocks": 12}
    spec = tmp_path / "tiny-paged.json"
    spec.write_text(json.dumps(dict(PAGED, cases=PAGED["cases"] + [spare_pages])))
    suite = flashsim.golden.Suite(flashsim.golden.generate(str(spec), tmp_path / "suite", progress=False))
    for case in suite:
        cache = case.paged_cache()
        bits = {n: np.asarray(case.native.tensor(n)) for n in case.input_names}
        want_k, want_v, offsets = _gather_cache(bits)
        page, ptr, lens = cache.page_size, cache.indptr, cache.lengths
        assert ptr[0] == 0 and len(cache.indices) == ptr[-1] and cache.k.dtype.name == "bfloat16"
        for b in range(len(lens)):
            pages = cache.indices[ptr[b]:ptr[b + 1]]
            assert len(pages) == -(-int(lens[b]) // page) and lens[b] == offsets[b + 1] - offsets[b]
            if len(pages):
                assert (len(pages) - 1) * page + cache.last_page_len[b] == lens[b]
            for got, want in ((cache.k, want_k), (cache.v, want_v)):
                rows = np.asarray(got).view(np.uint16)[pages].reshape(-1, *got.shape[2:])[:lens[b]]
                assert np.array_equal(rows, want[offsets[b]:offsets[b + 1]]), (case.name, b)
        spare = np.setdiff1d(np.arange(cache.k.shape[0]), cache.indices)
        assert (len(spare) > 0) == (case.name == "spare") and np.array_equal(np.asarray(cache.k).view(np.uint16)[spare], bits["k_cache"][spare])
    assert suite["append"].paged_cache().lengths.tolist() == [2, 11, 22]  # cache_seqlens + seqlen_new
    with pytest.raises(ValueError, match="not a KV-cache case"):
        flashsim.golden.Suite(SMOKE)["fp16-causal-odd"].paged_cache()


@pytest.mark.parametrize("layout", ["bhsd", "tokens"])
def test_layouts_carry_inputs_and_outputs_both_ways(smoke, layout):
    # batch 2 (flash-dma), a packed variable-length case, GQA, head_dim_v != d: the stand-in kernel's outputs in the
    # layout pass; the same values with the batch and sequence axes of lse swapped fail.
    for name in ("bf16-flash-dma", "bf16-varlen-causal", "fp16-mqa", "fp32-dv-ne-d"):
        case = smoke[name]
        varlen, c = case.has_feature("varlen"), case.case_json
        q = case.inputs("q", layout=layout)
        tokens = case.inputs("q").shape[0] if varlen else c["batch"] * c["seqlen_q"]  # stored [total, h, d]
        assert q.shape == {"bhsd": (1, c["heads_q"], tokens, c["head_dim"]) if varlen else
                           (c["batch"], c["heads_q"], c["seqlen_q"], c["head_dim"]),
                           "tokens": (tokens, c["heads_q"], c["head_dim"])}[layout]
        out = numpy_outputs(case)
        from flashsim._layout import from_case, shape_in  # what verify undoes, checked against inputs()
        assert np.array_equal(np.asarray(from_case(case.inputs("q"), "q", layout, varlen)), np.asarray(q))
        moved = {n: from_case(x, n, layout, varlen) for n, x in out.items()}
        for n, x in out.items():  # the shape arithmetic verify() checks a caller's outputs with
            assert np.asarray(moved[n]).shape == shape_in(np.asarray(x).shape, n, layout, varlen), (name, n)
        assert case.verify(layout=layout, raise_on_failure=False, **moved).passed, name
        if layout == "tokens" and not varlen and c["batch"] > 1:  # [b * s, h] read as [s * b, h]: wrong rows
            lse = moved["lse"].reshape(c["batch"], c["seqlen_q"], -1).swapaxes(0, 1).reshape(tokens, -1)
            assert not case.verify(layout=layout, raise_on_failure=False, **{**moved, "lse": lse}).passed


def test_lse_in_another_base_is_scaled_to_the_natural_log(smoke):
    case = smoke["fp16-alibi-causal"]
    out = numpy_outputs(case)
    log2 = {**out, "lse": out["lse"] / np.log(2)}
    assert case.verify(lse_base=2, raise_on_failure=False, **log2).passed
    assert not case.verify(raise_on_failure=False, **log2).passed
    with pytest.raises(ValueError, match="lse_base"):
        case.verify(lse_base=1, **out)
    with pytest.raises(ValueError, match="layout"):
        case.verify(layout="bsdh", **out)
    with pytest.raises(ValueError, match="layout"):
        case.inputs("q", layout="thd")
    with pytest.raises(ValueError, match=r"output 'o' has shape \[56, 2, 2, 32\]; in layout 'bhsd' the case needs"):
        smoke["bf16-flash-dma"].verify(layout="bhsd", o=numpy_outputs(smoke["bf16-flash-dma"])["o"].swapaxes(0, 1))


def test_with_grads_differentiates_the_leaves_the_case_holds(smoke):
    torch = pytest.importorskip("torch")
    case = smoke["bf16-flash-dma"]  # o, lse, dq, dk, dv
    like = torch.empty(0)
    q, k, v, do = (x.float() for x in case.inputs("q", "k", "v", "do", like=like))
    leaves = {"q": q, "k": k, "v": v, "sinks": torch.zeros(3)}  # no dsinks in this case: not differentiated
    w = torch.randn(q.shape[-1], v.shape[-1])

    def forward():  # a stand-in with an lse and a known gradient: o = q w + 2 k + v
        return q @ w + 2 * k + v, q.sum(-1).transpose(1, 2)

    with pytest.raises(ValueError, match="leaves: v given as None, but case bf16-flash-dma holds dv"):
        case.with_grads(forward, {**leaves, "v": None}, do)
    with pytest.raises(ValueError, match="cotangent: None, but case bf16-flash-dma holds dq, dk, dv"):
        case.with_grads(forward, leaves, None)
    out = case.with_grads(forward, leaves, do)()
    assert set(out) == {"o", "lse", "dq", "dk", "dv"} and not leaves["sinks"].requires_grad
    assert torch.allclose(out["dq"], do @ w.T) and torch.equal(out["dk"], 2 * do) and torch.equal(out["dv"], do)
    forward_only = smoke["fp16-seqlen-1"]
    if "dq" not in forward_only.output_names:
        x = torch.ones(2)
        assert set(forward_only.with_grads(lambda: x * 2, {"q": x}, None)()) == {"o"} and not x.requires_grad
