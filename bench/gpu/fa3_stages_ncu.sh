#!/usr/bin/env bash
# On the GPU machine: why fa3-v1's three-stage d96 forward loses 5-12% to two stages on some long launches
# (n4096 plain, n16384 causal; equal at n1024: bench/results/fa3_calib_h200_2026-11-29, tune/) while the
# per-tile costs of calib put them within 1%. For each shape, stages 2 and 3 of the same tile (Br 128, Bc 128):
#   - CUDA events (flashsim-gpu bench, median of 20), twice, alternating the two instances;
#   - ncu of the second timed launch: duration, DRAM bytes, L2 hit rate, SM and tensor-pipe throughput, the warp
#     stall reasons and the occupancy, so the loss can be placed (memory side, barrier waits, issue).
#   bash bench/gpu/fa3_stages_ncu.sh BUNDLE OUT
# SHAPES (default below): "batch:heads:seqlen:causal" entries; DIM (96), BLOCK_K (128) the tile.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=$1
out=$2
mkdir -p "$out"
eval "$(python3 bench/gpu/bundle.py env "$bundle")"
fg=$bundle/flashsim-gpu
d=${DIM:-96}
bk=${BLOCK_K:-128}
# the autotune grid's d96 shapes: 2688 tiles of Br 128 each (h21: 2048 / 96 heads rounded down)
shapes=${SHAPES:-"16:21:1024:no 4:21:4096:no 4:21:4096:yes 1:21:16384:no 1:21:16384:yes"}
metrics="$(python3 bench/gpu/ncu.py metrics stalls),dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum"
nvidia-smi -L | tee "$out/gpu.txt"
for s in $shapes; do
  IFS=: read -r b h n causal <<< "$s"
  args=(--kernel fa3-v1 --batch "$b" --heads "$h" --seqlens "$n" --head-dims "$d" --causal "$causal"
    --block-q 128 --block-k "$bk")
  name=b${b}_h${h}_n${n}_causal_${causal}
  for round in 1 2; do
    for st in 2 3; do
      echo "round $round stages $st: $("$fg" bench "${args[@]}" --stages $st --repeats 20 --csv | tail -1)"
    done
  done > "$out/events_$name.txt" 2>&1
  for st in 2 3; do
    timeout 200 ncu --clock-control none --kernel-name regex:flashsim_fa3_fwd_kernel --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --metrics "$metrics" \
      --print-details all "$fg" bench "${args[@]}" --stages $st --repeats 3 > "$out/ncu_${name}_st$st.txt" 2>&1
  done
  echo "== $name"
  cat "$out/events_$name.txt"
  for st in 2 3; do
    echo "-- stages $st"
    grep -E "gpu__time_duration.sum|dram__bytes_read.sum|lts__t_sector_hit_rate|stalled_(barrier|long_sc|wait|math|mio|no_instr|selected)|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Dynamic Shared" \
      "$out/ncu_${name}_st$st.txt" | head -20
  done
done
