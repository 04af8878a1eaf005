#!/usr/bin/env bash
# On the GPU machine: what the decode model under load is calibrated and checked against, on any card, in one run
# (the H200's took 5 calls on 2026-11-29, bench/results/decode_h200_2026-11-28; about 6 minutes here):
#   bash bench/gpu/decode_load.sh OUT [BUNDLE]
# - the load probe (calibration decode.load_h200 on the H200): one CTA a sequence (4 query heads over 1 kv head,
#   one split) at 1, 66, 132, 264 and 528 sequences, 2 .. 128 key tiles, pages 16 and 256, decode-v2 and
#   decode-v1, at d128 -> OUT/probe/, d64 -> OUT/probe/d64/, d256 -> OUT/probe/d256/;
# - the held-out sets 4 and 5 (bench/gpu/decode_heldout.py: random problems, every split count timed) ->
#   OUT/heldout4/, OUT/heldout5/;
# - issue 30's grid (batch 1 .. 128, 1K .. 32K keys, pages 16 and 256) with SDPA's backends -> OUT/grid/.
# Then here: for D in 128 64 256: python3 bench/gpu/run.py derive decode-load build/default/flashsim OUT/probe[/dD]
# --hw PROFILE [--head-dim D] --write; rebuild; python3 bench/gpu/decode_heldout.py --set 4|5 compare
# build/default/flashsim OUT/heldout4|5 --hw PROFILE; and run.py table decode OUT/grid/*.csv --model (sim tune --json).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: decode_load.sh OUT [BUNDLE]}
bundle=${2:-.gpu-bundle}
probe="--heads 4 --heads-kv 1 --batches 1,66,132,264,528 --cache-lens 128,256,512,1024,2048,4096,8192 --page-sizes 16,256 --repeats 20"
mkdir -p "$out/probe"
start=$(date +%s)
for d in 128 64 256; do
  dir=$out/probe
  [ "$d" = 128 ] || dir=$out/probe/d$d
  python3 bench/gpu/run.py decode --bundle "$bundle" --out "$dir" --no-check --no-sanitize --no-sdpa \
    --kernels decode-v2,decode-v1 --grid "$probe --head-dim $d" > "$dir.log" 2>&1
  echo "probe d$d: exit $? ($(($(date +%s) - start)) s)"
done
for set in 4 5; do
  python3 bench/gpu/decode_heldout.py --set "$set" measure "$bundle" "$out/heldout$set" > "$out/heldout$set.log" 2>&1
  echo "held-out set $set: exit $? ($(($(date +%s) - start)) s)"
done
python3 bench/gpu/run.py decode --bundle "$bundle" --out "$out/grid" --no-check --kernels decode-v2 \
  --grid "--batches 1,8,32,64,128 --cache-lens 1024,8192,32768 --page-sizes 16,256 --repeats 10" \
  --sdpa-grid "--batches 1,8,32,64,128 --cache-lens 1024,8192,32768" > "$out/grid.log" 2>&1
echo "grid: exit $? ($(($(date +%s) - start)) s)"
nvidia-smi > "$out/gpu.txt" 2>&1
nvidia-smi -q -d PERFORMANCE > "$out/nvsmi_after.txt" 2>&1
