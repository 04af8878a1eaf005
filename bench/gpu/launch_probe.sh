#!/usr/bin/env bash
# Runs bench/gpu/launch_probe.cu under Nsight Compute (time and DRAM counters, default cache control), three
# times, into $1/launch_probe_run<N>.csv and .err (the launch list). Build here first:
#   nvcc -O2 -arch=sm_90 -o build/gpu_probe/launch_probe bench/gpu/launch_probe.cu
set -u
out=${1:-${OUT:-.}}
bin=${2:-build/gpu_probe/launch_probe}
for run in 1 2 3; do
  ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    "$bin" > "$out/launch_probe_run$run.csv" 2> "$out/launch_probe_run$run.err"
  echo "run $run rc=$? $(grep -c gpu__time_duration "$out/launch_probe_run$run.csv") launches"
done
