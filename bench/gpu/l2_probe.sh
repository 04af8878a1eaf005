#!/usr/bin/env bash
# Runs the L2 probes (bench/gpu/l2_probe.cu) under Nsight Compute with its default cache control (L2 flushed
# before each launch), one CSV row per launch and metric, into $1/l2_probe.csv; the launch list goes to
# $1/l2_probe.err. Build here first: nvcc -O2 -arch=sm_90 -o build/gpu_probe/l2_probe bench/gpu/l2_probe.cu
set -u
out=${1:-${OUT:-.}}
bin=${2:-build/gpu_probe/l2_probe}
# METRICS=dram: only the two DRAM counters (one replay pass), into l2_probe_dram.csv / .err. PROBES=NAME runs one
# family of probes (l2_probe.cu's argument, e.g. dirty_reuse).
metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum
name=l2_probe
if [ "${METRICS:-}" = dram ]; then
  metrics=dram__bytes_read.sum,dram__bytes_write.sum
  name=l2_probe_dram
fi
ncu --clock-control none --csv --metrics "$metrics" "$bin" ${PROBES:-} > "$out/$name.csv" 2> "$out/$name.err"
echo "$name rc=$? $(grep -c dram__bytes_write "$out/$name.csv") launches"
