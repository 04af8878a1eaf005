#!/usr/bin/env bash
# Copies the cases of a generated default suite under 500 KB (24 of 161; the whole suite is 360 MB, more than
# the GPU machine's 64 MiB transfer) into gpu_golden/default with a manifest listing just them, plus a
# safetensors wheel (the GPU machine has no network). Then, on the GPU machine: bash bench/gpu/sdpa_golden.sh $OUT
# (pass carry: ["gpu_golden"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:-build/default/golden/default}
rm -rf gpu_golden && mkdir -p gpu_golden/default gpu_golden/wheels
python3 - "$src" <<'PY'
import json, os, shutil, sys
src = sys.argv[1]
m = json.load(open(os.path.join(src, "manifest.json")))
m["cases"] = [c for c in m["cases"] if os.path.getsize(os.path.join(src, c["file"])) < 500_000]
for c in m["cases"]:
    shutil.copy(os.path.join(src, c["file"]), os.path.join("gpu_golden/default", c["file"]))
json.dump(m, open("gpu_golden/default/manifest.json", "w"), indent=2)
print(f"{len(m['cases'])} cases in gpu_golden/default")
PY
python3 -m pip download -q safetensors==0.8.0 --no-deps -d gpu_golden/wheels
