#!/usr/bin/env python3
"""Writes the bad-input corpus's files under tests/cli/bad_inputs/files from one small committed golden case
(golden/data/smoke/fp16-seqlen-1.safetensors). Deterministic; its output is committed, so this only needs to
run again when the golden format changes. Every suite folder gets a manifest whose sha256 matches its
(bad) file, so that the damage itself is what the reader meets."""
import hashlib
import json
import math
import os
import shutil
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "cli", "bad_inputs", "files")
CASE = "fp16-seqlen-1"
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "BOOL": 1, "U8": 1, "I32": 4, "I64": 8}
FMT = {"F64": "d", "F32": "f", "F16": "e"}


def read_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    meta = header.pop("__metadata__", None)
    tensors = []  # (name, dtype, shape, bytes) in file order
    for name, t in header.items():
        b0, b1 = t["data_offsets"]
        tensors.append([name, t["dtype"], list(t["shape"]), bytearray(data[b0:b1])])
    return meta, tensors


def st_bytes(meta, tensors):
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    off = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(bytes(t[3]) for t in tensors)


def raw_st(header, data=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def tensor(tensors, name):
    return next(t for t in tensors if t[0] == name)


def set_value(t, index, value):
    size = SIZES[t[1]]
    struct.pack_into("<" + FMT[t[1]], t[3], index * size, value)


def fresh():
    meta, tensors = read_st(os.path.join(ROOT, "golden", "data", "smoke", CASE + ".safetensors"))
    return meta, tensors


def case_meta(meta, **changes):
    c = json.loads(meta["flashsim.case"])
    c.update(changes)
    m = dict(meta)
    m["flashsim.case"] = json.dumps(c, separators=(",", ":"))
    return m


MANIFEST = json.load(open(os.path.join(ROOT, "golden", "data", "smoke", "manifest.json")))
ENTRY = next(e for e in MANIFEST["cases"] if e["name"] == CASE)


def manifest_for(data, **changes):
    m = {k: v for k, v in MANIFEST.items() if k != "cases"}
    m["case_count"] = 1
    e = dict(ENTRY)
    e["index"] = 0
    e["sha256"] = hashlib.sha256(data).hexdigest()
    m["cases"] = [e]
    m.update(changes)
    return json.dumps(m, indent=2) + "\n"


def suite(name, data, manifest=None):
    """A suite folder NAME holding the one case as DATA, with a manifest that matches it."""
    d = os.path.join(OUT, name)
    os.makedirs(d)
    open(os.path.join(d, CASE + ".safetensors"), "wb").write(data)
    open(os.path.join(d, "manifest.json"), "w").write(manifest if manifest is not None else manifest_for(data))


def candidate(name, tensors, meta=None):
    d = os.path.join(OUT, name)
    os.makedirs(d)
    open(os.path.join(d, CASE + ".safetensors"), "wb").write(st_bytes(meta, tensors))


def write(name, text):
    p = os.path.join(OUT, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb" if isinstance(text, bytes) else "w").write(text)


def main():
    # Everything but fuzz/ (inputs fuzzing once crashed on, kept as they were found) is written anew.
    os.makedirs(OUT, exist_ok=True)
    for entry in os.listdir(OUT):
        if entry != "fuzz":
            path = os.path.join(OUT, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    meta, tensors = fresh()
    good = st_bytes(meta, tensors)
    suite("good", good)  # the baseline: every case below differs from it in one way

    # --- the safetensors container
    suite("truncated-8", good[:8])
    suite("truncated-5", good[:5])
    suite("truncated-data", good[:-10])
    suite("empty-file", b"")
    n = struct.unpack("<Q", good[:8])[0]
    suite("header-past-end", struct.pack("<Q", len(good)) + good[8:])
    suite("header-2e64", struct.pack("<Q", 2**64 - 1) + good[8:])
    suite("header-near-2e64", struct.pack("<Q", 2**64 - 8) + good[8:])
    suite("header-not-json", good[:8] + b"X" + good[9:])
    suite("header-broken-json", good[:8 + n // 2] + b"\x00" + good[8 + n // 2 + 1:])
    suite("header-array", raw_st([1, 2, 3]) + b"")
    _, t = fresh()
    q = tensor(t, "q")
    hdr = json.loads(good[8:8 + n])
    hdr["q"]["shape"] = [2**32, 2**32, 2, 17]
    suite("shape-overflow", raw_st(hdr, good[8 + n:]))
    hdr = json.loads(good[8:8 + n])
    hdr["q"]["shape"] = [2**62, 4, 1, 1]
    suite("shape-bytes-overflow", raw_st(hdr, good[8 + n:]))
    hdr = json.loads(good[8:8 + n])
    hdr["q"]["shape"] = [-1, 1, 2, 17]
    suite("shape-negative", raw_st(hdr, good[8 + n:]))
    hdr = json.loads(good[8:8 + n])
    hdr["q"]["data_offsets"] = [0, 2**64 - 1]
    suite("offset-2e64", raw_st(hdr, good[8 + n:]))
    hdr = json.loads(good[8:8 + n])
    hdr["k"]["data_offsets"] = [60, 128]
    suite("offsets-overlap", raw_st(hdr, good[8 + n:]))
    hdr = json.loads(good[8:8 + n])
    hdr["q"]["dtype"] = "F4_E2M1"
    suite("dtype-unknown", raw_st(hdr, good[8 + n:]))

    # --- the golden case inside a valid container
    meta, t = fresh()
    tensor(t, "q")[2] = [0, 1, 2, 17]
    tensor(t, "q")[3] = bytearray()
    suite("zero-size-q", st_bytes(meta, t))
    meta, t = fresh()
    suite("case-batch-zero", st_bytes(case_meta(meta, batch=0), t))
    meta, t = fresh()
    suite("case-head-dim-negative", st_bytes(case_meta(meta, head_dim=-17, head_dim_v=-17), t))
    meta, t = fresh()
    suite("case-seqlen-overflow", st_bytes(case_meta(meta, seqlen_q=2**62, seqlen_k=2**62), t))
    meta, t = fresh()
    suite("case-not-json", st_bytes(dict(meta, **{"flashsim.case": "{not json"}), t))
    meta, t = fresh()
    suite("no-metadata", st_bytes(None, t))
    meta, t = fresh()
    suite("missing-v", st_bytes(meta, [x for x in t if x[0] != "v"]))
    meta, t = fresh()
    q = tensor(t, "q")
    q[1], q[3] = "I32", bytearray(len(q[3]) * 2)
    suite("q-int32", st_bytes(meta, t))
    meta, t = fresh()
    tensor(t, "k")[2] = [1, 2, 1, 17]
    suite("k-wrong-shape", st_bytes(meta, t))
    meta, t = fresh()
    t.append(["mask", "BOOL", [1, 2, 1, 2], bytearray(4)])
    suite("mask-shape-mismatch", st_bytes(case_meta(meta, mask="bhqk"), t))
    meta, t = fresh()
    set_value(tensor(t, "q"), 3, math.nan)
    suite("q-nan", st_bytes(meta, t))
    meta, t = fresh()
    set_value(tensor(t, "k"), 0, math.inf)
    suite("k-inf", st_bytes(meta, t))

    # --- manifests
    suite("sha256-mismatch", good, manifest_for(good[:-1] + b"\x01"))
    suite("manifest-not-json", good, "{\"format\": ")
    suite("manifest-wrong-format", good, manifest_for(good, format="flashsim.golden.manifest/99"))
    suite("manifest-no-cases", good, manifest_for(good, cases=[], case_count=0))
    m = json.loads(manifest_for(good))
    m["cases"][0]["file"] = "missing.safetensors"
    suite("manifest-missing-file", good, json.dumps(m))
    m = json.loads(manifest_for(good))
    m["case_count"] = -3
    suite("manifest-negative-count", good, json.dumps(m))
    os.makedirs(os.path.join(OUT, "no-manifest"))
    open(os.path.join(OUT, "no-manifest", CASE + ".safetensors"), "wb").write(good)

    # --- candidates for the good suite: the exact outputs in F32 pass; each variant breaks one thing
    meta, t = fresh()
    outs = []
    for name, dtype, shape, data in t:
        if name in ("o", "lse", "dq", "dk", "dv"):
            vals = struct.unpack("<%dd" % (len(data) // 8), data)
            outs.append([name, "F32", shape, bytearray(struct.pack("<%df" % len(vals), *vals))])
    candidate("cand-good", outs)

    def cand(name, change, meta=None):
        c = [[a, b, list(s), bytearray(d)] for a, b, s, d in outs]
        change(c)
        candidate(name, c, meta)

    cand("cand-o-nan", lambda c: set_value(tensor(c, "o"), 5, math.nan))
    cand("cand-dq-inf", lambda c: set_value(tensor(c, "dq"), 0, math.inf))
    cand("cand-o-off", lambda c: set_value(tensor(c, "o"), 1, 123.0))

    def wrong_shape(c):
        tensor(c, "o")[2] = [1, 2, 1, 17]

    cand("cand-o-wrong-shape", wrong_shape)

    def int_o(c):
        o = tensor(c, "o")
        o[1] = "I32"

    cand("cand-o-int32", int_o)
    cand("cand-missing-lse", lambda c: c.remove(tensor(c, "lse")))
    cand("cand-bad-compute-dtype", lambda c: None, {"flashsim.compute_dtype": "fp8"})
    d = os.path.join(OUT, "cand-truncated")
    os.makedirs(d)
    open(os.path.join(d, CASE + ".safetensors"), "wb").write(st_bytes(None, outs)[:100])

    # --- suite specs, hardware profiles, ncu reports
    base = {"name": "bad", "version": 1, "cases": [{"name": "c", "batch": 1, "heads_q": 1, "seqlen": 4,
                                                   "head_dim": 8, "dtype": "fp32"}]}

    def spec(name, change):
        s = json.loads(json.dumps(base))
        change(s)
        write(os.path.join("specs", name + ".json"), json.dumps(s, indent=1) + "\n")

    write("specs/not-json.json", "{\"name\": \"bad\", \"cases\": [")
    spec("unknown-top-field", lambda s: s.update(casses=[]))
    spec("unknown-case-field", lambda s: s["cases"][0].update(head_dimm=8))
    spec("negative-seqlen", lambda s: s["cases"][0].update(seqlen=-4))
    spec("zero-heads", lambda s: s["cases"][0].update(heads_q=0))
    spec("unknown-dtype", lambda s: s["cases"][0].update(dtype="fp8"))
    spec("bad-name", lambda s: s["cases"][0].update(name="../escape"))
    spec("huge-problem", lambda s: s["cases"][0].update(seqlen=2**40, heads_q=2**20, head_dim=2**20))
    spec("duplicate-case", lambda s: s["cases"].append(dict(s["cases"][0])))
    spec("seqlens-negative", lambda s: s["cases"][0].update(seqlens_q=[3, -1]))
    spec("vary-not-list", lambda s: s.update(cases=[], groups=[{"base": s["cases"][0], "vary": {"seqlen": 4}}]))
    write("hw/missing-fields.json", json.dumps({"name": "gpu", "sms": 10}) + "\n")
    write("hw/not-json.json", "sms = 132\n")
    write("hw/negative-smem.json",
          json.dumps(dict(json.load(open(os.path.join(ROOT, "tiling_sim", "profiles", "H100-SXM5-80GB.json"))),
                          shared_memory_per_sm=-1), indent=1) + "\n")
    calib = open(os.path.join(ROOT, "tests", "data", "ncu_fa2_h100_calibration.csv")).read()
    lines = calib.splitlines(True)
    head = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    write("ncu/no-header.csv", "".join(lines[:head] + lines[head + 1:head + 6]))
    write("ncu/missing-column.csv", lines[head].replace('"Metric Value"', '"Value"') + "".join(lines[head + 1:head + 4]))
    write("ncu/duplicate-columns.csv", '"Metric Value","ID","ID","Kernel Name","Metric Name","Metric Unit"\n'
          '"1","2","3","4","5"\n')
    write("ncu/huge-template-args.csv",
          lines[head] + '"0","1","p","h","void flash_fwd_kernel<Flash_fwd_kernel_traits<128, '
          '99999999999999999999999, 0, 4, 0>>(Flash_fwd_params)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0",'
          '"s","dram__bytes_read.sum","byte","1,024"\n')
    write("ncu/zero-tile.csv",
          lines[head] + '"0","1","p","h","void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 0, 0, 0, 0>>'
          '(Flash_fwd_params)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","s","dram__bytes_read.sum","byte",'
          '"1,024"\n')
    # a details page without its 'Metric Name' column (not a raw page either), and a report of FA2 kernels with
    # none of the metrics flashsim compares: errors, not "all metrics within tolerance"
    write("ncu/no-metric-name.csv", lines[head].replace('"Metric Name",', "") + "".join(
        l.replace('"dram__bytes_read.sum",', "") for l in lines[head + 1:head + 2] if "dram__bytes_read.sum" in l))
    write("ncu/no-compared-metric.csv",
          lines[head] + '"0","1","p","h","void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, '
          'bfloat16_t>>(Flash_fwd_params)","1","7","(128, 1, 1)","(32, 2, 16)","0","9.0","s",'
          '"launch__registers_per_thread","register/thread","255"\n')
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"wrote {OUT} ({total} bytes)")


if __name__ == "__main__":
    sys.exit(main())
