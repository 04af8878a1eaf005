#!/usr/bin/env bash
# On the GPU machine: what the fa3 family's simulator models are calibrated and checked against.
#   bash bench/gpu/fa3_calib.sh CUTLASS_INCLUDE_TARBALL OUT
# Each part can be left out (0) or run alone:
#   CALIB=1    fa3_dev.cu's calibration shapes (MODE=calib; FA3_CALIB_ROUNDS sweeps, default 3, run.py derive
#              fa3-steps takes each shape's median): the forward's tile costs at 1 .. 32 key blocks a tile,
#              persistent and one CTA a tile, by CUDA events; and ncu (--clock-control none: the card's own
#              clocks, as events see them) of the backward on 264 heads x 4 key blocks at 1 .. 64 query blocks a
#              CTA (its main kernel's costs), and both causal at the longest (masked steps' costs): calibration
#              fa3.step_costs_h100 (run.py derive fa3-steps)
#   CALIB_BWD=1 (default: CALIB) the backward's ncu runs of CALIB alone, at the head dims CALIB_BWD_DIMS (default
#              "64 96 128 256"; d256's tile is Bc64, so its calibration has 256 keys: 4 key blocks a head, 1056 CTAs)
#   CALIB_SPREAD=1 (default 0) fa3_dev.cu's calib-spread: calib's forward shapes with the query heads over many
#              K / V heads (still L2-resident), whether calib's tile costs carry one K / V head's same-line reads
#   HELDOUT=1  bench/gpu/data/fa3_heldout.txt's shapes, drawn before any was timed: the forward by events with
#              fa3-v1's own schedule (HELDOUT_FWD=0: not), the backward's three kernels by ncu (bench/gpu/ncu.py's
#              TRAFFIC metrics); HELDOUT_DIMS="256" keeps the shapes of those head dims (default: all)
#   GRID=1     ncu of the backward on the bench grid, the issue's shape, a GQA and an odd-length causal problem
#   FWD_GRID=1 the forward on the bench grid with fa3-v1's own schedule, by events and by ncu (--clock-control
#              none): the time the fwd_fa3 model is checked against, two ways
#   NCU_D64=1  ncu of the d64 forward with its warps' stall reasons (where d64 loses to the tensor-bound estimate)
#   ACCUM=1    bench/gpu/probes/accum_probe.cu: wgmma's fp32 accumulation against mma.sync's
set -uo pipefail
cd "$(dirname "$0")/../.."
tarball=$1
out=$2
mkdir -p "$out/bwd_ncu"
bin=$(mktemp -d)
inc=$(mktemp -d)
tar -C "$inc" -xJf "$tarball"
if [ "${ACCUM:-1}" = 1 ]; then
  nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG -I "$inc/include" \
    bench/gpu/probes/accum_probe.cu -o "$bin/accum_probe" > "$out/accum_probe_build.txt" 2>&1 &
fi
KEEP_BIN=$bin SDPA=0 MODE=$([ "${CALIB:-1}" = 1 ] && echo calib || echo build) \
  bash bench/gpu/fa3_dev.sh "$tarball" "$out"
[ -x "$bin/fa3_dev" ] || exit 1
mv "$out/fa3_dev.txt" "$out/calib_events.txt" 2> /dev/null
wait
[ "${ACCUM:-1}" = 1 ] && timeout 60 "$bin/accum_probe" | tee "$out/accum_probe.txt"
[ "${CALIB_SPREAD:-0}" = 1 ] && timeout 300 "$bin/fa3_dev" calib-spread | tee "$out/calib_spread_events.txt"
metrics=$(python3 -c "import sys; sys.path.insert(0, 'bench/gpu'); import ncu; print(ncu.TRAFFIC)")
bwd_ncu() {  # name b h hkv sq sk d wl wr: one backward call's three kernels, after the timing's warm-up calls
  local name=$1
  shift
  timeout 120 ncu --clock-control none --csv --metrics "$metrics" --kernel-name regex:flashsim_fa3_bwd \
    --launch-skip 6 --launch-count 3 "$bin/fa3_dev" bwdshape "$@" > "$out/bwd_ncu/ncu_bwd_$name.csv" \
    2> "$out/bwd_ncu/ncu_bwd_$name.err"
  echo "ncu bwd $name: rc $?, $(grep -c flashsim_fa3_bwd "$out/bwd_ncu/ncu_bwd_$name.csv") rows"
}
start=$(date +%s)
if [ "${CALIB_BWD:-${CALIB:-1}}" = 1 ]; then
  for d in ${CALIB_BWD_DIMS:-64 96 128 256}; do
    # 4 key blocks a head at every head dim: 512 keys of the Bc128 tiles, 256 of d256's Bc64
    sk=$([ "$d" = 256 ] && echo 256 || echo 512)
    for sq in 64 128 256 512 1024 4096; do bwd_ncu "calib_d${d}_sq${sq}" 1 264 264 $sq $sk $d -1 -1; done
    # masked steps: causal (bottom-right), each key block's diagonal query blocks masked element by element
    bwd_ncu "calib_d${d}_sq4096_causal" 1 264 264 4096 $sk $d -1 0
  done
fi
if [ "${HELDOUT:-1}" = 1 ]; then
  grep -v '^#' bench/gpu/data/fa3_heldout.txt | while read -r b h hkv sq sk d wl wr; do
    [ -n "${HELDOUT_DIMS:-}" ] && ! [[ " $HELDOUT_DIMS " == *" $d "* ]] && continue
    [ "${HELDOUT_FWD:-1}" = 1 ] &&
      timeout 60 "$bin/fa3_dev" fwdshape $b $h $hkv $sq $sk $d $wl $wr | grep fwdshape | tee -a "$out/heldout_fwd.txt"
    bwd_ncu "heldout_${b}_${h}_${hkv}_${sq}_${sk}_${d}_${wl}_${wr}" $b $h $hkv $sq $sk $d $wl $wr
  done
fi
if [ "${GRID:-1}" = 1 ]; then
  for d in 64 128; do
    h=$((2048 / d))
    for n in 1024 4096 16384; do
      for causal in 0 1; do bwd_ncu "grid_d${d}_n${n}_c${causal}" $((16384 / n)) $h $h $n $n $d -1 $((causal - 1)); done
    done
  done
  for causal in 0 1; do bwd_ncu "issue_c${causal}" 2 16 16 4096 4096 128 -1 $((causal - 1)); done
  bwd_ncu gqa_d128_n2048 2 32 8 2048 2048 128 -1 -1
  bwd_ncu d96_n3000_causal 2 8 8 3000 3000 96 -1 0
fi
echo "backward ncu runs: $(($(date +%s) - start)) s"
if [ "${FWD_GRID:-1}" = 1 ]; then
  fwd_grid() {  # b h hkv sq sk d wl wr
    "$bin/fa3_dev" fwdshape "$@" | grep fwdshape | tee -a "$out/fwd_grid.txt"
    timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --kernel-name regex:flashsim_fa3_fwd \
      --launch-skip 3 --launch-count 1 "$bin/fa3_dev" fwdshape "$@" 2> /dev/null | grep gpu__time_duration |
      sed "s/^/ncu fwdshape $* : /" | tee -a "$out/fwd_grid.txt"
  }
  for d in 64 128; do
    for n in 1024 4096 16384; do
      for wr in -1 0; do fwd_grid $((16384 / n)) $((2048 / d)) $((2048 / d)) $n $n $d -1 $wr; done
    done
  done
  for wr in -1 0; do fwd_grid 2 16 16 4096 4096 128 -1 $wr; done
fi
if [ "${NCU_D64:-1}" = 1 ]; then
  timeout 120 ncu --clock-control none --kernel-name regex:flashsim_fa3_fwd --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section InstructionStats --section SourceCounters --import-source no \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_xu.sum,sm__cycles_elapsed.avg \
    -o "$bin/fwd_d64" "$bin/fa3_dev" 4 32 4096 64 0 1 1 > /dev/null 2>&1
  ncu -i "$bin/fwd_d64.ncu-rep" --print-details all > "$out/ncu_fwd_d64.txt" 2>&1
  ncu -i "$bin/fwd_d64.ncu-rep" --page source --csv --print-source sass | gzip -9 > "$out/ncu_fwd_d64_sass.csv.gz"
  grep -E "Duration|gmma|pipe_xu|Issued Warp|No Eligible|Stall" "$out/ncu_fwd_d64.txt" | head -20
fi
