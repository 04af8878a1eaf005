"""The committed golden files load unchanged with the safetensors package and NumPy (run by ctest).

Checks every file of a suite folder: its sha256 against the manifest (hashlib), its tensors' names, dtypes and
shapes against the case in __metadata__["flashsim.case"], that NumPy's own loader reads the non-bf16 files
as safetensors.deserialize does, and that the exact outputs are finite where they must be.
"""
import hashlib
import json
import os
import sys

import numpy as np
import safetensors.numpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "golden", "examples"))
from flashsim_golden import load_case, manifest  # noqa: E402

FIELDS = ["batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "head_dim_v", "scale", "causal",
          "window_left", "window_right", "softcap", "dtype", "seed"]
STORED = {"fp32": np.float32, "fp16": np.float16, "bf16": np.float32, "fp64": np.float64}


def check(folder):
    m = manifest(folder)
    assert m["case_count"] == len(m["cases"]) > 0
    for entry in m["cases"]:
        path = os.path.join(folder, entry["file"])
        with open(path, "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == entry["sha256"], path
        t, case = load_case(path)
        for field in FIELDS:
            assert field in case, (path, field)
        assert case["causal"] == (case["window_right"] == 0)
        b, hq, hk = case["batch"], case["heads_q"], case["heads_kv"]
        sq, sk, d, dv = case["seqlen_q"], case["seqlen_k"], case["head_dim"], case["head_dim_v"]
        if "seqlens_q" in case:
            tq, tk = sum(case["seqlens_q"]), sum(case["seqlens_k"])
            shapes = {"q": (tq, hq, d), "k": (tk, hk, d), "v": (tk, hk, dv), "o": (tq, hq, dv), "lse": (hq, tq)}
            assert list(t["cu_seqlens_q"]) == list(np.cumsum([0] + case["seqlens_q"])), path
            assert t["cu_seqlens_q"].dtype == np.int32
        else:
            shapes = {"q": (b, sq, hq, d), "k": (b, sk, hk, d), "v": (b, sk, hk, dv), "o": (b, sq, hq, dv),
                      "lse": (b, hq, sq)}
        shapes.update({"do": shapes["o"], "dq": shapes["q"], "dk": shapes["k"], "dv": shapes["v"]})
        for name, shape in shapes.items():
            assert t[name].shape == shape, (path, name, t[name].shape, shape)
        for name in ("q", "k", "v", "do"):
            assert t[name].dtype == STORED[case["dtype"]], (path, name, t[name].dtype)
        for name in ("o", "lse", "dq", "dk", "dv"):
            assert t[name].dtype == np.float64, (path, name)
            if name != "lse":
                assert np.isfinite(t[name]).all(), (path, name)
        assert not np.isnan(t["lse"]).any() and (t["lse"] < np.inf).all(), path
        if case["bias"] != "none":
            assert "dbias" in t and t["dbias"].shape == t["bias"].shape, path
        if case["mask"] != "none":
            assert t["mask"].dtype == np.bool_, path
        assert set(case["tolerances"]) >= {"fp32", "fp16", "bf16"} or case.get("magnitude", 1) > 1, path
        if case["dtype"] != "bf16":  # NumPy's own loader (it has no bfloat16)
            plain = safetensors.numpy.load_file(path)
            for name, value in plain.items():
                assert np.array_equal(value, t[name], equal_nan=True), (path, name)
    print(f"all {len(m['cases'])} golden files load with safetensors + NumPy")


if __name__ == "__main__":
    check(sys.argv[1])
