#!/usr/bin/env bash
# On the GPU machine: fa3-v1's quick loop. Compiles bench/gpu/fa3_dev.cu with gpu/fa3/fa3_fwd_d*.cu (one nvcc per
# head dim, in parallel), runs its checks and timings, then times SDPA's cuDNN and flash backends on the same
# grid in the same run:
#   bash bench/gpu/fa3_dev.sh CUTLASS_INCLUDE_TARBALL OUT
set -uo pipefail
cd "$(dirname "$0")/../.."
tarball=$1
out=$2
inc=$(mktemp -d)
tar -C "$inc" -xJf "$tarball"
flags=(-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG -Xptxas -v -lineinfo
  -I gpu/fa3 -I families/fa3/include -I "$inc/include")
obj=$(mktemp -d)
start=$(date +%s)
for src in gpu/fa3/fa3_fwd_d*.cu gpu/fa3/fa3_bwd_d*.cu bench/gpu/fa3_dev.cu; do
  nvcc "${flags[@]}" -c "$src" -o "$obj/$(basename "$src" .cu).o" > "$out/ptxas_$(basename "$src" .cu).txt" 2>&1 &
done
wait
nvcc -gencode=arch=compute_90a,code=sm_90a "$obj"/*.o -o "$obj/fa3_dev" >> "$out/ptxas_link.txt" 2>&1
echo "compiled in $(($(date +%s) - start)) s"
if [ ! -x "$obj/fa3_dev" ]; then grep -h -A3 "error" "$out"/ptxas_*.txt | head -40; exit 1; fi
# KEEP_BIN=DIR: the binary copied there (fa3_calib.sh runs it under ncu).
[ -n "${KEEP_BIN:-}" ] && cp "$obj/fa3_dev" "$KEEP_BIN/"
[ "${MODE:-}" = build ] && exit 0  # compiled only (fa3_calib.sh runs it)
grep -h -E "error|registers|spill" "$out"/ptxas_*.txt | grep -v " 0 bytes spill stores, 0 bytes spill loads" | sort | uniq -c | head -20
nvidia-smi -L
# TIMING=0: the checks alone; MODE=bwd: the backward's checks and timings alone; MODE=calib: the time model's
# calibration shapes (fa3_dev.cu says which).
if [ "${TIMING:-1}" = 0 ]; then "$obj/fa3_dev" checks; else "$obj/fa3_dev" ${MODE:-}; fi | tee "$out/fa3_dev.txt"
[ "${SDPA:-1}" = 1 ] && PYTHONUNBUFFERED=1 python3 bench/gpu/fa3_dev_sdpa.py | tee "$out/sdpa.txt"
# One ncu report of the issue's shape (b2 h16 n4096 d128, non-causal, persistent, ping-pong).
if [ "${NCU:-0}" = 1 ]; then
  for bn in 0; do
    ncu --kernel-name regex:fa3 --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
      "$obj/fa3_dev" 2 16 4096 128 0 1 1 > "$out/ncu_bn$bn.txt" 2>&1
    grep -E "Duration|Throughput|gmma|pipe_xu|Stall|Issued Warp|No Eligible|Active Warps" "$out/ncu_bn$bn.txt" | head -30
  done
fi
# NCU_BWD=1: the backward's main kernel at the issue's shape, where its warps stall and how busy its pipes are.
if [ "${NCU_BWD:-0}" = 1 ]; then
  ncu --kernel-name regex:flashsim_fa3_bwd_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio \
    --section SourceCounters --import-source no -o "$obj/bwd" "$obj/fa3_dev" bwd 2 16 4096 128 0 > /dev/null 2>&1
  ncu -i "$obj/bwd.ncu-rep" --print-details all > "$out/ncu_bwd.txt" 2>&1
  # Per SASS instruction: its warp-stall samples (where the warps wait).
  ncu -i "$obj/bwd.ncu-rep" --page source --csv --print-source sass > "$out/ncu_bwd_sass.csv" 2>&1
  grep -E "Duration|Throughput|Stall|Issued Warp|No Eligible|Active Warps|wavefronts" "$out/ncu_bwd.txt" | head -40
fi
# compute-sanitizer's memcheck, racecheck and synccheck over the checks (small shapes, every schedule variant).
if [ "${SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 "$obj/fa3_dev" checks > "$out/sanitizer_$tool.txt" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -c 'check .* ok$' "$out/sanitizer_$tool.txt") checks ok; $(tail -1 "$out/sanitizer_$tool.txt"))"
  done
fi
