"""Load flashsim golden cases and write candidate files, with the safetensors package and NumPy.

A golden case is one safetensors file: inputs (q k v do, and bias mask alibi_slopes cu_seqlens_q
cu_seqlens_k where present) in their stored dtype, exact outputs (o lse dq dk dv, dbias) in float64, and
__metadata__["flashsim.case"], the case as JSON (problem fields, seed, tolerances). A norm case (its JSON's
"op" is "rmsnorm" or "layernorm") holds x weight (bias) (residual) dy and y (h) rstd (mean) dx dweight (dbias)
(dresidual) instead.

NumPy has no bfloat16, so tensors are read through safetensors.deserialize (the package's own parser) and
BF16 is widened to float32 exactly (a bfloat16 is the top half of a float32).
"""
import json
import os
import shutil
import subprocess

import numpy as np
import safetensors
import safetensors.numpy

_NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BOOL": np.bool_, "U8": np.uint8,
          "I32": np.int32, "I64": np.int64}


def _to_numpy(dtype, shape, data):
    if dtype == "BF16":
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(data, dtype=np.dtype(_NUMPY[dtype]).newbyteorder("<")).reshape(shape).copy()


def load_case(path):
    """Returns (tensors, case): tensors maps name -> np.ndarray (BF16 as float32); case is the parsed JSON."""
    with open(path, "rb") as f:
        raw = f.read()
    tensors = {name: _to_numpy(t["dtype"], t["shape"], t["data"]) for name, t in safetensors.deserialize(raw)}
    with safetensors.safe_open(path, framework="numpy") as f:
        case = json.loads(f.metadata()["flashsim.case"])
    return tensors, case


def save_candidate(path, outputs, compute_dtype):
    """Writes a candidate file: outputs maps output names (o/lse/dq/dk/dv/dbias, a norm's y/rstd/dx/...) to float arrays (any float dtype NumPy has);
    compute_dtype ("bf16", ...) tells `flashsim golden verify` which tolerance applies."""
    arrays = {k: np.ascontiguousarray(v) for k, v in outputs.items()}
    safetensors.numpy.save_file(arrays, path, metadata={"flashsim.compute_dtype": compute_dtype})


def manifest(golden_dir):
    with open(os.path.join(golden_dir, "manifest.json")) as f:
        return json.load(f)


def write_and_verify(golden_dir, out, kernel, flashsim, keep=False):
    """Writes a candidate file per case of the suite (kernel(tensors, case) -> outputs) into out, verifies the
    folder with `flashsim golden verify --json` and returns the report's cases (out removed unless keep). Bad
    input (exit 2) raises SystemExit with flashsim's message."""
    os.makedirs(out, exist_ok=True)
    for e in manifest(golden_dir)["cases"]:
        t, case = load_case(os.path.join(golden_dir, e["file"]))
        save_candidate(os.path.join(out, e["file"]), kernel(t, case), case["dtype"])
    r = subprocess.run([flashsim, "golden", "verify", "--golden", golden_dir, "--candidate", out, "--json"],
                       capture_output=True, text=True)
    if r.returncode == 2:
        raise SystemExit(r.stderr)
    if not keep:
        shutil.rmtree(out)
    return json.loads(r.stdout)["cases"]
