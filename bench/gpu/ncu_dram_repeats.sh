#!/usr/bin/env bash
# Repeatability of ncu's DRAM counters: every recorded shape (the 7, the 5 validation shapes, the calibration
# problem) profiled RUNS times with the two DRAM counters alone (one pass), each run into OUTDIR/runN/<set>/.
# Run on the GPU machine from the repository root: RUNS=3 bash bench/gpu/ncu_dram_repeats.sh OUTDIR
set -u
out=${1:-${OUT:-.}}
for run in $(seq 1 "${RUNS:-3}"); do
  for set in first validation calibration; do
    d="$out/run$run/$set"
    mkdir -p "$d"
    shapes=$set
    [ "$set" = first ] && shapes=
    echo "== run $run, $set"
    SHAPES=$shapes METRICS=dram bash bench/gpu/ncu_shapes.sh "$d" 2>&1 | grep -v '^==' | grep -c rc=0
  done
done
