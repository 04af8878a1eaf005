#!/usr/bin/env bash
# On the GPU machine: why fa2-v1's masked forward step costs 9x a plain one at d64 and 3x at d128
# (bench/results/fa2_model_h100_2026-11-27, calibration fa2.step_costs_h100). The lead: the cost tracks the
# kernel's code size (201 KB at d64), larger than an SM's instruction cache, so a masked step would wait for
# instructions (ncu counted fewer instructions, not more). This records, for the d64 and d128 launch tiles,
# causal and not, on a problem of one wave of tiles (b16 h32 n1024 d64, b16 h16 n1024 d128):
#   - ncu's warp-state stalls (WarpStateStats: "No Instruction" is the instruction-fetch wait), the
#     instruction mix and the duration;
#   - each fa2-v1 forward kernel's SASS instruction count (cuobjdump), the code the SM must fetch.
#   bash bench/gpu/fa2_masked_stalls.sh BUNDLE OUT
# DIMS (default "64 128") the head dims; TILE_D64, TILE_D96, ...: bench's tile flags at that head dim (default:
# the launch tile; a FLASHSIM_GPU_INSTANCES=ci bundle has one forward and one backward tile a head dim, which
# fa2/fa2_launch.h lists, e.g. "--block-q 128 --block-k 64 --warps 4 --bwd-block-q 128 --bwd-block-k 128" at d64).
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=$1
out=$2
mkdir -p "$out"
eval "$(python3 bench/gpu/bundle.py env "$bundle")"
fg=$bundle/flashsim-gpu
stalls=$(python3 bench/gpu/ncu.py metrics stalls)
nvidia-smi -L | tee "$out/gpu.txt"
# an sm_90 instruction is 16 bytes: the count times 16 is the code's size
cuobjdump -sass "$fg" 2> /dev/null |
  awk '/Function :/ {name = $3} /^[[:space:]]+\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]+\*\// {n[name]++}
       END {for (k in n) if (k ~ /fa2_fwd/) print n[k], n[k] * 16, k}' | sort -k3 > "$out/fa2_fwd_sass_instructions.txt"
echo "fa2-v1 forward kernels (SASS instructions, bytes, name): $(wc -l < "$out/fa2_fwd_sass_instructions.txt")"
for d in ${DIMS:-64 128}; do
  h=$((2048 / d))
  tile_var=TILE_D$d
  tile=${!tile_var:-}
  for causal in no yes; do
    name=d${d}_causal_$causal
    "$fg" bench --kernel fa2-v1 --batch 16 --heads $h --seqlens 1024 --head-dims $d --causal $causal --repeats 5 $tile \
      > "$out/bench_$name.txt" 2>&1
    timeout 120 ncu --clock-control none --kernel-name regex:flashsim_fa2_fwd_kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
      --section LaunchStats --metrics "$stalls" --print-details all "$fg" bench --kernel fa2-v1 --batch 16 --heads $h --seqlens 1024 --head-dims $d \
      --causal $causal --repeats 3 $tile > "$out/ncu_$name.txt" 2>&1
    echo "== $name: $(grep -m1 -E 'fa2-v1' "$out/bench_$name.txt")"
    grep -E "Duration|Executed Instructions  |stalled_|Warp Cycles Per Issued|Issue Slots Busy|Registers Per" \
      "$out/ncu_$name.txt" | head -20
  done
done
