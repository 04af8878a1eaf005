"""Load flashsim golden cases and write candidate files, with the safetensors package and NumPy.

A golden case is one safetensors file: inputs (q k v do, and bias mask alibi_slopes cu_seqlens_q
cu_seqlens_k where present) in their stored dtype, exact outputs (o lse dq dk dv, dbias) in float64, and
__metadata__["flashsim.case"], the case as JSON (problem fields, seed, tolerances). A norm case (its JSON's
"op" is "rmsnorm" or "layernorm") holds x weight (bias) (residual) dy and y (h) rstd (mean) dx dweight (dbias)
(dresidual) instead.

NumPy has no bfloat16, so tensors are read through safetensors.deserialize (the package's own parser) and
BF16 is widened to float32 exactly (a bfloat16 is the top half of a float32). Nor has it FP8: F8_E4M3 and F8_E5M2
(an FP8 case's q k v) are widened to float32 exactly through a table of the 256 codes (fp8_values), with the
descale factors (q_descale k_descale v_descale, F32) beside them: real value = stored * descale.
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


def fp8_values(fmt):
    """The float32 value of each of the 256 codes of OCP FP8 e4m3 (e4m3fn: bias 7, S.1111.111 NaN, no
    infinities) or e5m2 (bias 15, S.11111.00 inf, S.11111.xx NaN), from the format's definition."""
    exp_bits, man_bits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    code = np.arange(256)
    sign = np.where(code & 0x80, -1.0, 1.0)
    e = (code & 0x7F) >> man_bits
    m = code & ((1 << man_bits) - 1)
    top = (1 << exp_bits) - 1
    v = np.where(e == 0, np.ldexp(m.astype(np.float64), 1 - bias - man_bits),
                 np.ldexp(((1 << man_bits) + m).astype(np.float64), e - bias - man_bits))
    if fmt == "e4m3":
        v = np.where((e == top) & (m == (1 << man_bits) - 1), np.nan, v)
    else:
        v = np.where(e == top, np.where(m == 0, np.inf, np.nan), v)
    return (sign * v).astype(np.float32)


def _to_numpy(dtype, shape, data):
    if dtype in ("F8_E4M3", "F8_E5M2"):
        codes = np.frombuffer(data, dtype=np.uint8)
        return fp8_values("e4m3" if dtype == "F8_E4M3" else "e5m2")[codes].reshape(shape)
    if dtype == "BF16":
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(data, dtype=np.dtype(_NUMPY[dtype]).newbyteorder("<")).reshape(shape).copy()


def load_case(path):
    """Returns (tensors, case): tensors maps name -> np.ndarray (BF16 and FP8 as float32); case is the parsed
    JSON."""
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
