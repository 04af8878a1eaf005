#!/usr/bin/env bash
# Does what ncu reports for DRAM bytes depend on how many metrics (replay passes) are collected? Profiles the
# d96 n2048 SDPA flash forward/backward and the L2 probe's fa_mimic launches with the two DRAM counters alone,
# with the 5-metric set of l2_probe.sh and with the 16-metric set of ncu_metrics.sh, into $1 (default $OUT).
set -u
out=${1:-${OUT:-.}}
small=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum
dram_only=dram__bytes_read.sum,dram__bytes_write.sum
source "$(dirname "$0")/ncu_metrics.sh"
big=$ncu_metrics
for set in dram_only small big; do
  ncu --clock-control none -k regex:flash --csv --metrics "${!set}" python3 bench/gpu/one_sdpa.py 2 16 16 2048 96 0 \
    > "$out/sdpa_d96_$set.csv" 2> "$out/sdpa_d96_$set.err"
  ncu --clock-control none -k regex:fa_mimic --csv --metrics "${!set}" build/gpu_probe/l2_probe \
    > "$out/mimic_$set.csv" 2> "$out/mimic_$set.err"
  echo "$set: $(grep -c dram__bytes_write "$out/sdpa_d96_$set.csv") sdpa rows, $(grep -c dram__bytes_write "$out/mimic_$set.csv") mimic rows"
done
(cd "$out" && tar -czf metric_sets.tar.gz sdpa_d96_*.csv mimic_*.csv && rm -f sdpa_d96_* mimic_*)
